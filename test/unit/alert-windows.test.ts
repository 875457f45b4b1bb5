import { describe, expect, it } from 'vitest';
import type { AlertRuleRuntime } from '../../src/core/config.js';
import type { GatewayEvents, RequestSummary } from '../../src/core/events.js';
import { CountWindow } from '../../src/telemetry/alerts/bucket-ring.js';
import { P95_RELATIVE_ERROR } from '../../src/telemetry/alerts/latency-window.js';
import { AlertEngine, p95, type AlertNotification } from '../../src/telemetry/alerts/rules.js';

/** An engine on a hand-moved clock; `rules.current` can be replaced, as a config change does. */
function engine(initial: AlertRuleRuntime[]) {
  let now = 1_700_000_000_000;
  const rules = { current: initial };
  const sent: AlertNotification[] = [];
  const e = new AlertEngine({
    rules: () => rules.current,
    budgetUsage: () => null,
    now: () => now,
    windowNow: () => now,
    publish: ({ notification }) => {
      if (notification) sent.push(notification);
    },
  });
  return { e, sent, rules, at: () => now, advance: (ms: number) => (now += ms) };
}

const base = { severity: 'warning' as const, channels: ['ops'], cooldownMs: 0 };
const attempt = (ok: boolean): GatewayEvents['provider.attempted'] => ({ requestId: 'r', provider: 'openai', model: 'm', attempt: 1, ok, status: ok ? 200 : 500, durationMs: 5 });
const answered = (durationMs: number, firstTokenMs: number | null = null): GatewayEvents['request.completed'] =>
  ({ route: 'chat', model: 'chat', provider: 'openai', status: 200, attempts: 1, cancelled: false, durationMs, stream: firstTokenMs !== null, firstTokenMs }) as RequestSummary & { cancelled: boolean };
const failed: GatewayEvents['request.failed'] = {
  route: 'chat', model: 'chat', provider: 'openai', status: 502, attempts: 1, firstTokenMs: null, code: 'upstream_error', type: 'upstream', message: 'bad gateway',
} as unknown as GatewayEvents['request.failed'];

/** A seeded generator (mulberry32), so a distribution is the same at every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const RATE = 500; // events a second
const EVERY_MS = 1_000 / RATE;
const FIVE_MINUTES = 300_000;

describe('alert windows at a high rate', () => {
  it('count a failure burst in the first minute at the end of a five-minute window, and drop it as it leaves', () => {
    // min_requests is the whole window (500 a second for 300 s): the rules can judge only once it holds all of it.
    const whole = (RATE * FIVE_MINUTES) / 1_000;
    const { e, sent, advance } = engine([
      { ...base, name: 'errors', kind: 'error_rate', threshold_pct: 5, window_ms: FIVE_MINUTES, min_requests: whole },
      { ...base, name: 'five-hundreds', kind: 'server_errors', threshold_pct: 5, window_ms: FIVE_MINUTES, min_requests: whole },
    ]);
    // 30% of the first minute's requests fail (9,000 of 30,000): 6% of the window's 150,000.
    for (let i = 0; i < whole; i++) {
      const fails = i < 30_000 && i % 10 < 3;
      e.providerAttempted(attempt(!fails));
      if (fails) e.requestFailed(failed);
      else e.requestCompleted(answered(100));
      if (i % RATE === RATE - 1) e.tick();
      advance(EVERY_MS);
    }
    advance(-EVERY_MS); // the last event's time: the window's start is 300 s before it
    e.tick();
    expect(sent).toEqual([
      expect.objectContaining({ rule: 'errors', status: 'firing', details: expect.objectContaining({ attempts: whole, failed: 9_000, errorRatePct: 6 }) }),
      expect.objectContaining({ rule: 'five-hundreds', status: 'firing', details: expect.objectContaining({ requests: whole, serverErrors: 9_000, serverErrorPct: 6 }) }),
    ]);
    // The traffic goes on, all answered: once the burst's first 5,000 requests (10 s) are out of the window, 7,500
    // failures of 150,000 are 5%, not over it. The window's edge is exact to a bucket (a 300th of it).
    let resolvedAfterMs: number | null = null;
    for (let i = 1; resolvedAfterMs === null && i <= 20 * RATE; i++) {
      advance(EVERY_MS);
      e.providerAttempted(attempt(true));
      e.requestCompleted(answered(100));
      if (i % RATE === 0) {
        e.tick();
        if (sent.length === 4) resolvedAfterMs = i * EVERY_MS;
      }
    }
    expect(sent.slice(2).map((n) => [n.rule, n.status])).toEqual([['errors', 'resolved'], ['five-hundreds', 'resolved']]);
    expect(resolvedAfterMs).toBeGreaterThanOrEqual(10_000);
    expect(resolvedAfterMs).toBeLessThanOrEqual(12_000);
  });

  it(`compute p95 over the whole window within ${P95_RELATIVE_ERROR * 100}% of the exact nearest-rank value`, () => {
    const next = random(42);
    const distributions: Record<string, (i: number) => number> = {
      // A slow first minute (5-10 s answers) then fast ones: the window's p95 is in the slow minute.
      'slow first minute': (i) => (i < 30_000 ? 5_000 + next() * 5_000 : 200 + next() * 400),
      'log-uniform 1 ms to 60 s': () => Math.exp(next() * Math.log(60_000)),
      'exponential, mean 800 ms': () => -800 * Math.log(1 - next()),
      'whole milliseconds, 50-3,000': () => Math.round(50 + next() * 2_950),
    };
    const whole = (RATE * FIVE_MINUTES) / 1_000;
    for (const [name, draw] of Object.entries(distributions)) {
      const { e, sent, advance } = engine([
        { ...base, name: 'slow', kind: 'latency_p95', threshold_ms: 1, for_ms: 0, window_ms: FIVE_MINUTES, min_requests: whole },
        { ...base, name: 'slow-first-token', kind: 'ttft_p95', threshold_ms: 1, for_ms: 0, window_ms: FIVE_MINUTES, min_requests: whole },
      ]);
      const durations: number[] = [];
      const firstTokens: number[] = [];
      for (let i = 0; i < whole; i++) {
        const duration = draw(i);
        const firstToken = duration / 4;
        durations.push(duration);
        firstTokens.push(firstToken);
        e.requestCompleted(answered(duration, firstToken));
        if (i % RATE === RATE - 1) e.tick();
        advance(EVERY_MS);
      }
      advance(-EVERY_MS);
      e.tick();
      const reported = Object.fromEntries(sent.map((n) => [n.rule, n.details]));
      for (const [rule, values] of [['slow', durations], ['slow-first-token', firstTokens]] as const) {
        const exact = p95(values);
        expect(reported[rule], `${name}: ${rule}`).toMatchObject({ requests: whole });
        const estimate = reported[rule]?.p95Ms as number;
        // details round to hundredths of a millisecond
        expect(Math.abs(estimate - exact), `${name}: ${rule} p95 ${estimate} ms, exactly ${exact} ms`).toBeLessThanOrEqual(exact * P95_RELATIVE_ERROR + 0.005);
      }
    }
  });

  it('hold as many buckets at 1,000 requests a second as at 10, bounded by the windows', () => {
    const footprints = [10, 100, 1_000].map((rate) => {
      const { e, advance } = engine([
        { ...base, name: 'errors', kind: 'error_rate', threshold_pct: 5, window_ms: FIVE_MINUTES },
        { ...base, name: 'errors-hourly', kind: 'error_rate', threshold_pct: 1, window_ms: 3_600_000 },
        { ...base, name: 'slow', kind: 'latency_p95', threshold_ms: 10_000, window_ms: FIVE_MINUTES },
        { ...base, name: 'five-hundreds', kind: 'server_errors', threshold_pct: 5, window_ms: 60_000 },
      ]);
      const next = random(rate);
      // Six minutes: every bucket of the five-minute windows has had requests.
      for (let i = 0; i < rate * 360; i++) {
        e.providerAttempted(attempt(next() > 0.01));
        e.requestCompleted(answered(50 + next() * 5_000));
        if (i % rate === 0) e.tick();
        advance(1_000 / rate);
      }
      e.tick();
      return e.footprint();
    });
    // One subject (openai, route chat) per kind of sample; 301 buckets per window whatever its length (three
    // windows on openai's attempts and durations, one on the route's requests), at most one histogram per bucket.
    expect(footprints[0]).toEqual({ subjects: 3, buckets: 4 * 301, histograms: 301 });
    expect(footprints[1]).toEqual(footprints[0]);
    expect(footprints[2]).toEqual(footprints[0]);
  });

  it('keep an open alert whose rule changed its window open until the new window holds enough to judge', () => {
    const rule = { ...base, name: 'errors', kind: 'error_rate' as const, threshold_pct: 50, window_ms: 60_000, min_requests: 10 };
    const { e, sent, rules, advance } = engine([rule]);
    for (let i = 0; i < 10; i++) e.providerAttempted(attempt(false));
    e.tick();
    expect(sent.map((n) => n.status)).toEqual(['firing']);
    // The operator widens the window: a window of the new length starts empty, which says nothing of the provider.
    rules.current = [{ ...rule, window_ms: 120_000 }];
    advance(1_000);
    e.tick();
    e.providerAttempted(attempt(false));
    advance(1_000);
    e.tick();
    expect(sent.map((n) => n.status)).toEqual(['firing']);
    // Healed: judged on the new window once it holds min_requests, under the id it fired with.
    for (let i = 0; i < 10; i++) e.providerAttempted(attempt(true));
    e.tick();
    expect(sent.map((n) => [n.status, n.id])).toEqual([['firing', sent[0]?.id], ['resolved', sent[0]?.id]]);
    expect(sent[1]?.details).toMatchObject({ attempts: 11, failed: 1, windowMs: 120_000 });
  });

  it('forget what a clock stepped back further than the window left ahead of it', () => {
    const { e, sent, advance } = engine([{ ...base, name: 'errors', kind: 'error_rate', threshold_pct: 50, window_ms: 60_000, min_requests: 2 }]);
    advance(3_600_000);
    for (let i = 0; i < 3; i++) e.providerAttempted(attempt(false));
    advance(-3_600_000); // an NTP correction of an hour
    for (let i = 0; i < 2; i++) e.providerAttempted(attempt(true));
    e.tick();
    expect(sent).toEqual([]);
  });

  it('count from times near 0 (a monotonic clock early in the process) as from any other', () => {
    const window = new CountWindow(60_000);
    window.add(1_500, true);
    window.add(2_000, false);
    expect(window.read(2_500)).toEqual({ count: 2, failed: 1 });
    expect(window.read(63_000)).toEqual({ count: 0, failed: 0 });
  });
});
