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
