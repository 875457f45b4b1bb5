import type { RequestContext } from './context.js';
import { formatResetDuration, parseResetDuration } from './durations.js';
import { withChanges, type GatewayError } from './errors.js';

/**
 * The provider's rate-limit headers of a request's successful attempt (already in the route's style: see
 * providers/upstream-rate-limits.ts), kept apart from the headers the stages set: the gateway's own limits (a key's,
 * a team's, a key's per-model windows, written by the rate-limit stage and the attempt plan) are compared and
 * written among themselves, and go out instead of the provider's of the same unit when the answer's headers are made.
 */
const upstreamLimits = new WeakMap<RequestContext, ReadonlyArray<readonly [string, string]>>();

/** Sets the answering attempt's provider headers; null (each attempt starts so) forgets an earlier attempt's. */
export function setUpstreamLimitHeaders(ctx: RequestContext, pairs: ReadonlyArray<readonly [string, string]> | null): void {
  if (pairs === null || pairs.length === 0) upstreamLimits.delete(ctx);
  else upstreamLimits.set(ctx, pairs);
}

const UNIT_OF_NAME = /^(?:x-ratelimit-(?:limit|remaining|reset)-(requests|tokens)|anthropic-ratelimit-(requests|tokens)-(?:limit|remaining|reset))$/;

/**
 * Adds the provider's rate-limit headers to `headers`, leaving out a unit (requests, tokens) the gateway limits
 * itself, as `own` shows (what the stages set): its own headers of that unit say what the client meets first.
 */
function addPairs(pairs: ReadonlyArray<readonly [string, string]>, own: Readonly<Record<string, string | undefined>>, headers: Record<string, string>): void {
  const ownRequests = own['x-ratelimit-limit-requests'] !== undefined;
  const ownTokens = own['x-ratelimit-limit-tokens'] !== undefined;
  for (const [name, value] of pairs) {
    const unit = UNIT_OF_NAME.exec(name);
    const limited = unit === null ? false : (unit[1] ?? unit[2]) === 'requests' ? ownRequests : ownTokens;
    if (!limited && headers[name] === undefined) headers[name] = value;
  }
}

/** Adds the answering attempt's provider headers to a successful answer's `headers` (which hold what the stages set). */
export function addUpstreamLimitHeaders(ctx: RequestContext, headers: Record<string, string>): void {
  const pairs = upstreamLimits.get(ctx);
  if (pairs !== undefined) addPairs(pairs, ctx.responseHeaders, headers);
}

/**
 * An upstream error answer with its provider's rate-limit headers: they go wherever the error goes (the request may
 * end with an earlier attempt's error, after a later attempt reached no upstream), never on another attempt's answer.
 */
export function withUpstreamLimitHeaders(ctx: RequestContext, error: GatewayError, pairs: ReadonlyArray<readonly [string, string]> | null): GatewayError {
  if (pairs === null) return error;
  const headers: Record<string, string> = { ...error.headers };
  addPairs(pairs, ctx.responseHeaders, headers);
  return withChanges(error, { headers });
}

const UNITS = ['requests', 'tokens'] as const;
const FIELDS = ['limit', 'remaining', 'reset'] as const;
type Read = (name: string) => string | undefined;

/** OpenAI's requests and tokens headers (`x-ratelimit-<field>-<unit>`) under Anthropic's names, the reset duration as the time it ends. */
export function openAILimitsAsAnthropic(read: Read, now: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const unit of UNITS) {
    for (const field of FIELDS) {
      const value = read(`x-ratelimit-${field}-${unit}`);
      if (value === undefined) continue;
      const ms = field === 'reset' ? parseResetDuration(value) : null;
      if (field !== 'reset') out.push([`anthropic-ratelimit-${unit}-${field}`, value]);
      else if (ms !== null) out.push([`anthropic-ratelimit-${unit}-${field}`, new Date(now + ms).toISOString()]);
    }
  }
  return out;
}

/** Anthropic's requests and tokens headers under OpenAI's names (which have no input and output groups), the reset time as the duration until it. */
export function anthropicLimitsAsOpenAI(read: Read, now: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const unit of UNITS) {
    for (const field of FIELDS) {
      const value = read(`anthropic-ratelimit-${unit}-${field}`);
      if (value === undefined) continue;
      const at = field === 'reset' ? Date.parse(value) : Number.NaN;
      if (field !== 'reset') out.push([`x-ratelimit-${field}-${unit}`, value]);
      else if (Number.isFinite(at)) out.push([`x-ratelimit-${field}-${unit}`, formatResetDuration(at - now)]);
    }
  }
  return out;
}

/**
 * The gateway's own limits (OpenAI's `x-ratelimit-*-<unit>` names, as the rate-limit stage writes them) also under
 * Anthropic's names, for the `/anthropic` route whose clients read those.
 */
export function addAnthropicNamesOfOwnLimits(headers: Record<string, string>, now: number): void {
  // A unit is the gateway's when its limit is there (the rate-limit stage writes all three of a unit).
  const own: Read = (name) => (headers[`x-ratelimit-limit-${name.endsWith('-tokens') ? 'tokens' : 'requests'}`] === undefined ? undefined : headers[name]);
  for (const [name, value] of openAILimitsAsAnthropic(own, now)) headers[name] = value;
}
