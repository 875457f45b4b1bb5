// Response headers OpenAI sends with every answer: request id, processing time, API version and rate-limit state.
import { randomHex } from './random-ids.js';

export const REQUEST_LIMIT = 10_000;
export const TOKEN_LIMIT = 2_000_000;
const WINDOW_MS = 60_000;

export type HeaderMap = Record<string, string>;

/** `req_` + 32 hex chars, like OpenAI's x-request-id. */
export function newRequestId(): string {
  return `req_${randomHex(16)}`;
}

export function standardHeaders(requestId: string, startedAt: number): HeaderMap {
  return {
    'x-request-id': requestId,
    'openai-version': '2020-10-01',
    'openai-processing-ms': String(Date.now() - startedAt),
  };
}

/**
 * Formats a duration the way OpenAI's x-ratelimit-reset-* headers do (Go duration style):
 * "6ms", "0s", "1s", "1.5s", "6m0s".
 */
export function formatResetDuration(ms: number): string {
  const whole = Math.round(ms);
  if (whole <= 0) return '0s';
  if (whole < 1000) return `${whole}ms`;
  const hours = Math.floor(whole / 3_600_000);
  const minutes = Math.floor((whole % 3_600_000) / 60_000);
  const seconds = (whole % 60_000) / 1000;
  const secondsText = `${Number(seconds.toFixed(3))}s`;
  if (hours > 0) return `${hours}h${minutes}m${secondsText}`;
  if (minutes > 0) return `${minutes}m${secondsText}`;
  return secondsText;
}

/**
 * A fixed one-minute window that counts requests and tokens, so the remaining-* headers decrease from request
 * to request the way a real account's do, and the reset-* headers say how long until the consumed budget refills.
 */
export class RateLimitWindow {
  private windowStart = Date.now();
  private requests = 0;
  private tokens = 0;

  consume(tokens: number, now: number = Date.now()): HeaderMap {
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.requests = 0;
      this.tokens = 0;
    }
    this.requests = Math.min(REQUEST_LIMIT, this.requests + 1);
    this.tokens = Math.min(TOKEN_LIMIT, this.tokens + tokens);
    return {
      'x-ratelimit-limit-requests': String(REQUEST_LIMIT),
      'x-ratelimit-limit-tokens': String(TOKEN_LIMIT),
      'x-ratelimit-remaining-requests': String(REQUEST_LIMIT - this.requests),
      'x-ratelimit-remaining-tokens': String(TOKEN_LIMIT - this.tokens),
      // Budgets refill continuously: each request is worth WINDOW/LIMIT of waiting (6ms at 10k RPM).
      'x-ratelimit-reset-requests': formatResetDuration((this.requests * WINDOW_MS) / REQUEST_LIMIT),
      'x-ratelimit-reset-tokens': formatResetDuration((this.tokens * WINDOW_MS) / TOKEN_LIMIT),
    };
  }
}

/** Headers of a 429: an exhausted budget plus retry-after in whole seconds. */
export function exhaustedRateLimitHeaders(retryAfterSeconds = 1): HeaderMap {
  const reset = formatResetDuration(retryAfterSeconds * 1000);
  return {
    'retry-after': String(retryAfterSeconds),
    'x-ratelimit-limit-requests': String(REQUEST_LIMIT),
    'x-ratelimit-limit-tokens': String(TOKEN_LIMIT),
    'x-ratelimit-remaining-requests': '0',
    'x-ratelimit-remaining-tokens': '0',
    'x-ratelimit-reset-requests': reset,
    'x-ratelimit-reset-tokens': reset,
  };
}
