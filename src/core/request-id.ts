import { randomInt } from 'node:crypto';

/**
 * One id per request, shown to the client (`x-request-id`, and `request-id` on `/anthropic`) and used as the
 * request's key in the request log, so the id a client saw finds its entry in `/api/logs/<id>`. Ids sort by time
 * (zero-padded epoch milliseconds, a dash, a sequence) because the log is read newest first by key order; the
 * sequence starts at a random point so ids from two runs in the same millisecond do not collide.
 */
let sequence = randomInt(0, 1_000_000);

export function newRequestId(now: number = Date.now()): string {
  sequence = (sequence + 1) % 1_000_000;
  return `${String(now).padStart(15, '0')}-${String(sequence).padStart(6, '0')}`;
}
