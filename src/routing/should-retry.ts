import { withChanges, type GatewayError } from '../core/errors.js';

type Headers = Record<string, string | string[] | undefined>;

/** The header OpenAI and Anthropic send on error answers, which their SDKs obey over the status when deciding to retry. */
const SHOULD_RETRY = 'x-should-retry';

/** What an upstream's `x-should-retry` says, trimmed and lower-cased (undefined when absent). */
function shouldRetrySaid(headers: Headers): string | undefined {
  const raw = headers[SHOULD_RETRY];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value?.trim().toLowerCase();
}

/**
 * Whether an upstream error answer said not to call again (`x-should-retry: false`): retrying that target is
 * wasted (and, for a 5xx, billed or counted against the key's limits again), though another target may still answer.
 */
export function upstreamSaysNoRetry(headers: Headers): boolean {
  return shouldRetrySaid(headers) === 'false';
}

/**
 * Whether an upstream error answer said to call again (`x-should-retry: true`), whatever its status: the OpenAI
 * and Anthropic SDKs retry such an answer (a 400 or 409 the upstream knows to be passing), so tollgate does too.
 */
export function upstreamSaysRetry(headers: Headers): boolean {
  return shouldRetrySaid(headers) === 'true';
}

/**
 * The error of an upstream answer as its `x-should-retry` has it. `true`: retryable, so the call stage retries it
 * as it does a retryable status (within max_attempts and the deadline, with backoff, on the same target), and
 * the header goes on to the client, whose SDK would have retried the upstream's answer too. `false`: see notToRetry.
 * Without the header, the error as it was.
 */
export function asUpstreamSaid(error: GatewayError, headers: Headers): GatewayError {
  if (upstreamSaysNoRetry(headers)) return notToRetry(error);
  if (!upstreamSaysRetry(headers)) return error;
  return withChanges(error, { retryable: true, headers: { ...error.headers, [SHOULD_RETRY]: 'true' } });
}

/**
 * The error of such an answer, carrying `x-should-retry: false` on to the client: should the request end with it,
 * the client's SDK (which would retry a 5xx or a 429 by its status) does not send again what the upstream refused.
 * The header also tells the call stage not to retry that target in this request.
 */
export function notToRetry(error: GatewayError): GatewayError {
  if (error.headers[SHOULD_RETRY] === 'false') return error;
  return withChanges(error, { headers: { ...error.headers, [SHOULD_RETRY]: 'false' } });
}

/**
 * OpenAI's codes for an account whose credit or spend limit is used up (error type `insufficient_quota`, status 429):
 * `insufficient_quota` itself, and the finer codes OpenAI now gives it. OpenAI: retrying them does not restore access.
 */
const QUOTA_CODES = new Set(['insufficient_quota', 'credit_balance_exhausted', 'organization_spend_limit_exceeded', 'project_spend_limit_exceeded', 'organization_usage_limit_exceeded']);

/**
 * Whether an upstream 429 says the account's quota is used up (its credit, a spend or usage limit) rather than that
 * requests come too fast: a status of a rate limit, but no wait mends it until someone adds credit or the month turns.
 * The call stage treats it as it treats a 401 to a key of the config: not retried on that key, the request moves on.
 */
export function quotaExhausted(error: GatewayError): boolean {
  return error.upstreamStatus === 429 && (error.type === 'insufficient_quota' || (error.code !== null && QUOTA_CODES.has(error.code)));
}

/** The error of such an answer: not retryable, as no retry can succeed (over an `x-should-retry: true` too, see asUpstreamSaid). */
export function asQuotaSaid(error: GatewayError): GatewayError {
  return quotaExhausted(error) && error.retryable ? withChanges(error, { retryable: false }) : error;
}
