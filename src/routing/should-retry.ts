import { withChanges, type GatewayError } from '../core/errors.js';

type Headers = Record<string, string | string[] | undefined>;

/** The header OpenAI sends on error answers, which its SDKs obey over the status when deciding to retry. */
const SHOULD_RETRY = 'x-should-retry';

/**
 * Whether an upstream error answer said not to call again (`x-should-retry: false`): retrying that target is
 * wasted (and, for a 5xx, billed or counted against the key's limits again), though another target may still answer.
 */
export function upstreamSaysNoRetry(headers: Headers): boolean {
  const raw = headers[SHOULD_RETRY];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value?.trim().toLowerCase() === 'false';
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
