import type { RetryPolicy } from '../core/config.js';

/**
 * Exponential backoff with full jitter (a uniform pick between 0 and base x 2^retry, capped): retries from
 * many clients spread out instead of arriving together. `retry` counts from 0 for the first retry.
 */
export function backoffDelay(retry: number, policy: RetryPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(retry, 30));
  return Math.floor(random() * ceiling);
}

type Headers = Record<string, string | string[] | undefined>;

function first(headers: Headers, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The longest wait an upstream can impose (about 24.8 days, the longest timer Node keeps). A target paused
 * longer is as good as paused for ever, and a pause past the last date JavaScript can write (an upstream saying
 * `retry-after: 99999999999999`) broke every view that shows when it ends.
 */
const MAX_RETRY_AFTER_MS = 2_147_483_647;

/**
 * How long the upstream asked us to wait, in ms: OpenAI's `retry-after-ms`, or `retry-after` as seconds or an
 * HTTP date; at most MAX_RETRY_AFTER_MS. Null when it did not say (or said nonsense).
 */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | null {
  const asked = askedWaitMs(headers, now);
  return asked === null ? null : Math.min(asked, MAX_RETRY_AFTER_MS);
}

function askedWaitMs(headers: Headers, now: number): number | null {
  const ms = first(headers, 'retry-after-ms');
  if (ms !== undefined && ms.trim() !== '') {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return value;
  }
  const after = first(headers, 'retry-after')?.trim();
  if (!after) return null;
  if (/^\d+(\.\d+)?$/.test(after)) return Number(after) * 1000;
  // Only an HTTP date (it has a weekday and month name) is a date; Date.parse would read "-1" as 2001.
  if (!/[a-z]/i.test(after)) return null;
  const date = Date.parse(after);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}
