import { randomBytes } from 'node:crypto';

/** Anthropic message ids look like `msg_...`; an upstream id of another shape is kept inside one, so logs still match. */
export function messageId(upstreamId: unknown): string {
  if (typeof upstreamId === 'string' && upstreamId.startsWith('msg_')) return upstreamId;
  const tail = typeof upstreamId === 'string' ? upstreamId.replace(/[^A-Za-z0-9_]/g, '') : '';
  return `msg_${tail || randomBytes(12).toString('hex')}`;
}

/** For a tool call that arrived without an id (some providers stream none): Anthropic clients need one to answer it. */
export function toolUseId(): string {
  return `toolu_${randomBytes(12).toString('hex')}`;
}
