/**
 * Headers that frame the answer on the connection: Node and the answer writers set them, so http/answer-headers.ts
 * leaves out one a stage or a plugin put in `ctx.responseHeaders` (lower case here). Such a header (a plugin copying an
 * upstream's headers to the client) went out as it was: a content-length of the upstream's body cut the gateway's
 * answer short, under a 200, and a transfer-encoding or a content-encoding made it unreadable.
 */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'content-encoding', 'connection', 'keep-alive', 'upgrade', 'trailer', 'te', 'proxy-connection']);
