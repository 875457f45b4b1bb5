import type { RequestContext } from '../core/context.js';

/**
 * Headers that frame the answer on the connection: Node and the answer writers set them. One a stage or a plugin put
 * in `ctx.responseHeaders` (a plugin copying an upstream's headers to the client) went out as it was: a
 * content-length of the upstream's body cut the gateway's answer short, under a 200, and a transfer-encoding or a
 * content-encoding made it unreadable.
 */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'content-encoding', 'connection', 'keep-alive', 'upgrade', 'trailer', 'te', 'proxy-connection']);

/** The request's answer headers for the client: its id under `idNames`, then what the stages set, framing left out. */
export function answerHeaders(ctx: RequestContext, idNames: readonly string[] = ['x-request-id']): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of idNames) headers[name] = ctx.id;
  for (const [name, value] of Object.entries(ctx.responseHeaders)) {
    if (!FRAMING.has(name.toLowerCase())) headers[name] = value;
  }
  return headers;
}
