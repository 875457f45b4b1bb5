import type { RequestContext } from '../core/context.js';
import { addUpstreamLimitHeaders } from '../core/upstream-limit-headers.js';
import { FRAMING_HEADERS as FRAMING } from '../core/framing-headers.js';

const REQUEST_ID_ONLY: readonly string[] = ['x-request-id'];

/** The request's answer headers for the client: its id under `idNames`, then what the stages set, framing left out. */
export function answerHeaders(ctx: RequestContext, idNames: readonly string[] = REQUEST_ID_ONLY): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of idNames) headers[name] = ctx.id;
  const set = ctx.responseHeaders;
  // Every answer passes here: for-in over the stages' few headers, no entries array per request.
  for (const name in set) {
    if (Object.hasOwn(set, name) && !FRAMING.has(name.toLowerCase())) headers[name] = set[name] as string;
  }
  addUpstreamLimitHeaders(ctx, headers);
  return headers;
}
