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
 * The error types of a 429 that says the account cannot pay: OpenAI's `insufficient_quota`, Moonshot's
 * `exceeded_current_quota_error` (a balance used up or an account suspended for it, "please check your plan and billing
 * details"; its rate limit is `rate_limit_reached_error`).
 */
const QUOTA_TYPES: ReadonlySet<string> = new Set(['insufficient_quota', 'exceeded_current_quota_error']);

/**
 * OpenAI's codes for an account whose credit or spend limit is used up (error type `insufficient_quota`, status 429):
 * `insufficient_quota` itself, and the finer codes OpenAI now gives it. OpenAI: retrying them does not restore access.
 */
const QUOTA_CODES = new Set(['insufficient_quota', 'credit_balance_exhausted', 'organization_spend_limit_exceeded', 'project_spend_limit_exceeded', 'organization_usage_limit_exceeded']);

/**
 * The words a 429 opens with when it is a spend cap, not a rate limit. Anthropic, a usage tier's monthly spend cap
 * (rate_limit_error without retry-after, `enforced_spend_limit_reached`): "You have reached your API usage limits:
 * ... You will regain access on ..." (platform.claude.com/docs/en/api/rate-limits). xAI, a team without credit or past
 * its spending limit: "Your team <id> has either used all available credits or reached its monthly spending limit."
 * Anchored at the start: a message that quotes a client's input further on is not taken for one.
 */
const SPENT_429 = /^(?:You have reached your API usage limits\b|Your team \S+ has either used all available credits or reached its monthly spending limit)/;

/**
 * The words a 400 opens with when the account cannot pay. Anthropic: a spend limit the organization or workspace set
 * ("You have reached your specified API usage limits", "... specified workspace API usage limits", its errors page),
 * and a credit balance at zero ("Your credit balance is too low to access the Anthropic API", anthropic-sdk-typescript
 * issue 618). Gemini: a project without billing where the free tier is not offered ("Gemini API free tier is not
 * available in your country. Please enable billing ...", FAILED_PRECONDITION, its troubleshooting page).
 */
const UNPAID_400 = /^(?:You have reached your specified (?:workspace )?API usage limits\b|Your credit balance is too low to access the Anthropic API\b|Gemini API free tier is not available in your country\. Please enable billing\b)/;

/** Codes of a 400 that say the account cannot pay: Groq's spend limit (`blocked_api_access`, console.groq.com/docs/spend-limits). */
const UNPAID_400_CODES = new Set(['blocked_api_access']);

/**
 * Whether an upstream error says the account behind the key cannot pay for the request (out of credit, a spend or usage
 * limit reached, billing not set up) rather than that the request is wrong or comes too fast: no wait mends it until
 * someone adds credit or the month turns, and another key or provider can take the request meanwhile. The call stage
 * treats it as it treats a 401 to a key of the config: not retried on that key, the request moves on.
 * - any 402 Payment Required: Anthropic's `billing_error`, OpenRouter's insufficient credits, DeepSeek's "Insufficient
 *   Balance", Together's and Cohere's billing limit, Mistral's, Gemini's depleted prepay credits;
 * - a 429 of OpenAI's `insufficient_quota` (and its finer codes), of Moonshot's `exceeded_current_quota_error`, of
 *   Anthropic's spend cap, of xAI's team without credit;
 * - a 400 of Anthropic's spend limit or zero credit balance, Groq's `blocked_api_access`, Gemini's "enable billing".
 */
export function accountCannotPay(error: GatewayError): boolean {
  switch (error.upstreamStatus) {
    case 402:
      return true;
    case 429:
      return QUOTA_TYPES.has(error.type) || (error.code !== null && QUOTA_CODES.has(error.code)) || SPENT_429.test(error.message);
    case 400:
      return (error.code !== null && UNPAID_400_CODES.has(error.code)) || UNPAID_400.test(error.message);
    default:
      return false;
  }
}

/** The error of such an answer: not retryable, as no retry can succeed (over an `x-should-retry: true` too, see asUpstreamSaid). */
export function asCannotPaySaid(error: GatewayError): GatewayError {
  return accountCannotPay(error) && error.retryable ? withChanges(error, { retryable: false }) : error;
}
