// The x-ratelimit-* headers a keyed request's answer carries (requests and tokens: six headers), written into a new
// headers object as the rate-limit stage does: names built per call (`x-ratelimit-limit-${unit}`, as before) against
// writeLimitHeaders (the names written out), taking turns, six rounds of 300,000 requests. Figures only.
//
//   npx tsx bench/limit-headers.ts
import { formatResetDuration } from '../src/core/durations.js';
import { writeLimitHeaders } from '../src/governance/model-limits.js';
import type { WindowState } from '../src/governance/rate-limiter.js';

function namesBuilt(headers: Record<string, string>, unit: 'requests' | 'tokens', state: WindowState): void {
  headers[`x-ratelimit-limit-${unit}`] = String(state.limit);
  headers[`x-ratelimit-remaining-${unit}`] = String(state.remaining);
  headers[`x-ratelimit-reset-${unit}`] = formatResetDuration(state.fullResetMs);
}

let sink: unknown;
/** ns per request: both units' headers into a fresh object, with remaining counts and reset times that vary. */
function loop(write: typeof writeLimitHeaders, requests: number): number {
  const started = process.cpuUsage();
  for (let i = 0; i < requests; i++) {
    const headers: Record<string, string> = {};
    write(headers, 'tokens', { limit: 1_000_000_000, remaining: 999_995_000 - (i & 1023), resetMs: 0, fullResetMs: 59_999 - (i & 511) });
    write(headers, 'requests', { limit: 10_000_000, remaining: 9_999_000 - (i & 1023), resetMs: 0, fullResetMs: 59_998 - (i & 511) });
    sink = headers;
  }
  const used = process.cpuUsage(started);
  return ((used.user + used.system) / requests) * 1000;
}

for (let round = 0; round < 6; round++) {
  console.log(`round ${round + 1}: names built ${loop(namesBuilt, 300_000).toFixed(0)} ns a request, names written out ${loop(writeLimitHeaders, 300_000).toFixed(0)} ns`);
}
if (sink === undefined) console.log('');
