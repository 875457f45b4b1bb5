import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../../src/core/config.js';
import { backoffDelay, retryAfterMs } from '../../src/routing/backoff.js';
import { RateMeter } from '../../src/routing/rate-meter.js';

const retry: RetryPolicy = { maxAttempts: null, initialDelayMs: 100, maxDelayMs: 5_000, deadlineMs: 60_000 };

describe('backoffDelay', () => {
  it('doubles the ceiling per retry, starting at the initial delay', () => {
    // Just below 1 shows the ceiling itself (full jitter never reaches it).
    const top = (): number => 0.999_999;
    expect([0, 1, 2, 3, 4, 5].map((n) => backoffDelay(n, retry, top))).toEqual([99, 199, 399, 799, 1599, 3199]);
  });

  it('caps the ceiling at max_delay_ms, also for huge retry counts', () => {
    const top = (): number => 0.999_999;
    expect(backoffDelay(6, retry, top)).toBe(4999);
    expect(backoffDelay(10_000, retry, top)).toBe(4999);
    expect(backoffDelay(10_000, retry, () => 0.5)).toBe(2500);
  });

  it('picks uniformly between 0 and the ceiling (full jitter)', () => {
    expect(backoffDelay(3, retry, () => 0)).toBe(0);
    expect(backoffDelay(3, retry, () => 0.25)).toBe(200);
    expect(backoffDelay(3, retry, () => 0.5)).toBe(400);
  });

  it('stays an integer in [0, ceiling) with the default random', () => {
    const seen = new Set<number>();
    for (let i = 0; i < 2_000; i++) {
      const delay = backoffDelay(2, retry);
      expect(Number.isInteger(delay)).toBe(true);
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(400);
      seen.add(delay);
    }
    // Jitter really spreads retries out.
    expect(seen.size).toBeGreaterThan(100);
  });

  it('is always 0 when the policy allows no delay', () => {
    expect(backoffDelay(4, { ...retry, maxDelayMs: 0 }, () => 0.9)).toBe(0);
    expect(backoffDelay(4, { ...retry, initialDelayMs: 0 }, () => 0.9)).toBe(0);
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('Wed, 21 Oct 2015 07:28:00 GMT');

  it('reads retry-after-ms in milliseconds and prefers it over retry-after', () => {
    expect(retryAfterMs({ 'retry-after-ms': '1500' }, now)).toBe(1500);
    expect(retryAfterMs({ 'retry-after-ms': '250.5', 'retry-after': '30' }, now)).toBe(250.5);
    expect(retryAfterMs({ 'retry-after-ms': '0' }, now)).toBe(0);
  });

  it('falls back to retry-after when retry-after-ms is empty or nonsense', () => {
    for (const bad of ['', '  ', 'soon', '-5', 'Infinity']) {
      expect(retryAfterMs({ 'retry-after-ms': bad, 'retry-after': '2' }, now)).toBe(2000);
      expect(retryAfterMs({ 'retry-after-ms': bad }, now)).toBeNull();
    }
  });

  it('reads retry-after as seconds, fractions and surrounding spaces included', () => {
    expect(retryAfterMs({ 'retry-after': '2' }, now)).toBe(2000);
    expect(retryAfterMs({ 'retry-after': '1.5' }, now)).toBe(1500);
    expect(retryAfterMs({ 'retry-after': ' 3 ' }, now)).toBe(3000);
    expect(retryAfterMs({ 'retry-after': '0' }, now)).toBe(0);
  });

  it('reads retry-after as an HTTP date relative to now, never negative', () => {
    expect(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 07:28:05 GMT' }, now)).toBe(5000);
    expect(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 07:28:05 GMT' }, now + 1000)).toBe(4000);
    expect(retryAfterMs({ 'retry-after': 'Wed, 21 Oct 2015 07:27:00 GMT' }, now)).toBe(0);
  });

  it('takes the first value of a repeated header', () => {
    expect(retryAfterMs({ 'retry-after-ms': ['700', '900'] }, now)).toBe(700);
    expect(retryAfterMs({ 'retry-after': ['4', '9'] }, now)).toBe(4000);
  });

  it('is null when the upstream did not say or said nonsense', () => {
    expect(retryAfterMs({}, now)).toBeNull();
    expect(retryAfterMs({ 'retry-after': undefined }, now)).toBeNull();
    expect(retryAfterMs({ 'retry-after': '' }, now)).toBeNull();
    expect(retryAfterMs({ 'retry-after': '   ' }, now)).toBeNull();
    expect(retryAfterMs({ 'retry-after': 'later please' }, now)).toBeNull();
    expect(retryAfterMs({ 'retry-after': [] }, now)).toBeNull();
  });
});

describe('RateMeter', () => {
  it('reads 0 before anything happened', () => {
    expect(new RateMeter().perSecond(123_456)).toBe(0);
  });

  it('averages over the 10 s span', () => {
    const meter = new RateMeter();
    for (let i = 0; i < 20; i++) meter.mark(50_000 + i * 10);
    expect(meter.perSecond(50_500)).toBe(2);
    for (let s = 1; s < 10; s++) meter.mark(50_000 + s * 1000);
    expect(meter.perSecond(59_999)).toBeCloseTo(2.9);
  });

  it('drops a second once it falls out of the span', () => {
    const meter = new RateMeter();
    for (let i = 0; i < 10; i++) meter.mark(1_000);
    expect(meter.perSecond(10_999)).toBe(1);
    expect(meter.perSecond(11_000)).toBe(0);
  });

  it('reuses a slot for a new second without carrying the old count', () => {
    const meter = new RateMeter();
    for (let i = 0; i < 5; i++) meter.mark(3_200);
    // 13 s maps to the same slot as 3 s in a 10 s ring.
    meter.mark(13_100);
    expect(meter.perSecond(13_500)).toBeCloseTo(0.1);
  });

  it('counts second 0 (slots start empty, not at second 0)', () => {
    const meter = new RateMeter();
    expect(meter.perSecond(0)).toBe(0);
    meter.mark(0);
    expect(meter.perSecond(500)).toBeCloseTo(0.1);
  });

  it('honours a custom span', () => {
    const meter = new RateMeter(2);
    meter.mark(5_000);
    meter.mark(6_000);
    expect(meter.perSecond(6_500)).toBe(1);
    expect(meter.perSecond(7_000)).toBe(0.5);
    expect(meter.perSecond(8_000)).toBe(0);
  });
});
