import { describe, expect, it } from 'vitest';
import type { BreakerPolicy } from '../../src/core/config.js';
import { CircuitBreaker } from '../../src/routing/circuit-breaker.js';

// The rate trigger is parked out of reach unless a test wants it, so each test exercises one trigger.
function policy(overrides: Partial<BreakerPolicy> = {}): BreakerPolicy {
  return {
    enabled: true,
    consecutiveFailures: 3,
    failureRate: 0.5,
    windowMs: 10_000,
    minRequests: 1_000,
    cooldownMs: 5_000,
    halfOpenRequests: 1,
    ...overrides,
  };
}

/** A breaker opened at `at` by consecutive failures. */
function openedAt(at: number, p: BreakerPolicy): CircuitBreaker {
  const breaker = new CircuitBreaker();
  for (let i = 0; i < p.consecutiveFailures; i++) breaker.failure(at, p, 'closed');
  expect(breaker.state(at, p)).toBe('open');
  return breaker;
}

describe('CircuitBreaker: one target under two policies', () => {
  it('counts every call in each policy\'s window: a call under another window does not wipe the counts', () => {
    // A target both a route (10 s window) and direct requests (the default 30 s) reach.
    const route = policy({ consecutiveFailures: 100, minRequests: 4, failureRate: 0.5, windowMs: 10_000 });
    const direct = policy({ consecutiveFailures: 100, minRequests: 10, failureRate: 0.5, windowMs: 30_000 });
    const breaker = new CircuitBreaker();
    for (let i = 0; i < 2; i++) {
      expect(breaker.failure(i * 10, route, 'closed')).toBeNull();
      expect(breaker.failure(i * 10 + 5, direct, 'closed')).toBeNull();
    }
    expect(breaker.failureRate(16, route)).toEqual({ calls: 4, rate: 1 });
    expect(breaker.failureRate(16, direct)).toEqual({ calls: 4, rate: 1 });
    expect(breaker.failure(20, route, 'closed')).toBe('opened');
    expect(breaker.reason).toBe('100% of 5 calls failed in 10000 ms');
  });

  it('keeps each window to its own length', () => {
    const short = policy({ windowMs: 1_000 });
    const long = policy({ windowMs: 30_000 });
    const breaker = new CircuitBreaker();
    breaker.success(0, short, 'closed');
    breaker.failure(10, long, 'closed');
    expect(breaker.failureRate(20, short)).toEqual({ calls: 2, rate: 0.5 });
    expect(breaker.failureRate(5_000, short)).toEqual({ calls: 0, rate: 0 });
    expect(breaker.failureRate(5_000, long)).toEqual({ calls: 2, rate: 0.5 });
  });
});

describe('CircuitBreaker: closed', () => {
  it('admits calls and counts nothing while healthy', () => {
    const p = policy();
    const breaker = new CircuitBreaker();
    expect(breaker.state(0, p)).toBe('closed');
    expect(breaker.available(0, p)).toBe(true);
    expect(breaker.admit(0, p)).toBe('closed');
    expect(breaker.success(1, p, 'closed')).toBeNull();
    expect(breaker.consecutiveFailures()).toBe(0);
    expect(breaker.halfOpensAt(p)).toBeNull();
    expect(breaker.reason).toBeNull();
  });

  it('opens on the Nth consecutive failure, not before', () => {
    const p = policy({ consecutiveFailures: 3 });
    const breaker = new CircuitBreaker();
    expect(breaker.failure(100, p, 'closed')).toBeNull();
    expect(breaker.failure(200, p, 'closed')).toBeNull();
    expect(breaker.state(200, p)).toBe('closed');
    expect(breaker.failure(300, p, 'closed')).toBe('opened');
    expect(breaker.state(300, p)).toBe('open');
    expect(breaker.reason).toBe('3 consecutive failures');
    expect(breaker.available(300, p)).toBe(false);
    expect(breaker.admit(300, p)).toBeNull();
    expect(breaker.halfOpensAt(p)).toBe(300 + p.cooldownMs);
  });

  it('a success in between resets the consecutive count', () => {
    const p = policy({ consecutiveFailures: 3 });
    const breaker = new CircuitBreaker();
    breaker.failure(1, p, 'closed');
    breaker.failure(2, p, 'closed');
    breaker.success(3, p, 'closed');
    expect(breaker.consecutiveFailures()).toBe(0);
    expect(breaker.failure(4, p, 'closed')).toBeNull();
    expect(breaker.failure(5, p, 'closed')).toBeNull();
    expect(breaker.state(5, p)).toBe('closed');
    expect(breaker.failure(6, p, 'closed')).toBe('opened');
  });

  it('opens on the failure rate once the window holds min_requests calls', () => {
    const p = policy({ consecutiveFailures: 100, minRequests: 4, failureRate: 0.5 });
    const breaker = new CircuitBreaker();
    // Alternating outcomes never trip the consecutive rule; 2 of 3 failed is above the rate but below min_requests.
    expect(breaker.failure(1, p, 'closed')).toBeNull();
    breaker.success(2, p, 'closed');
    expect(breaker.failure(3, p, 'closed')).toBeNull();
    expect(breaker.failureRate(3, p)).toEqual({ calls: 3, rate: 2 / 3 });
    expect(breaker.state(3, p)).toBe('closed');
    breaker.success(4, p, 'closed');
    // 3 of 5 failed, at least the 0.5 threshold.
    expect(breaker.failure(5, p, 'closed')).toBe('opened');
    expect(breaker.reason).toBe(`60% of 5 calls failed in ${p.windowMs} ms`);
  });

  it('does not open while the failure rate stays below the threshold', () => {
    const p = policy({ consecutiveFailures: 100, minRequests: 4, failureRate: 0.5 });
    const breaker = new CircuitBreaker();
    for (let i = 0; i < 20; i++) {
      breaker.success(i * 3, p, 'closed');
      breaker.success(i * 3 + 1, p, 'closed');
      expect(breaker.failure(i * 3 + 2, p, 'closed')).toBeNull();
    }
    expect(breaker.state(60, p)).toBe('closed');
    expect(breaker.failureRate(60, p).rate).toBeCloseTo(1 / 3);
  });

  it('forgets outcomes older than the window', () => {
    const p = policy({ consecutiveFailures: 100, minRequests: 4, failureRate: 0.5, windowMs: 10_000 });
    const breaker = new CircuitBreaker();
    breaker.failure(0, p, 'closed');
    breaker.failure(1, p, 'closed');
    breaker.failure(2, p, 'closed');
    const later = 20_000;
    breaker.success(later, p, 'closed');
    breaker.success(later + 1, p, 'closed');
    breaker.success(later + 2, p, 'closed');
    // With the old failures still counted this would be 4 of 7 and open.
    expect(breaker.failure(later + 3, p, 'closed')).toBeNull();
    expect(breaker.failureRate(later + 3, p)).toEqual({ calls: 4, rate: 0.25 });
    // Outcomes count for the window, which ends on the edge of its twentieth (500 ms buckets here).
    expect(breaker.failureRate(later + 10_000, p).calls).toBe(4);
    expect(breaker.failureRate(later + 10_499, p).calls).toBe(4);
    expect(breaker.failureRate(later + 10_500, p).calls).toBe(0);
  });

  it('counts every call in the window in constant memory', () => {
    const p = policy({ windowMs: 60_000 });
    const breaker = new CircuitBreaker();
    for (let i = 0; i < 2_500; i++) breaker.success(i, p, 'closed');
    for (let i = 0; i < 500; i++) breaker.failure(2_500 + i, { ...p, consecutiveFailures: 10_000, minRequests: 1_000_000 }, 'closed');
    expect(breaker.failureRate(3_000, p)).toEqual({ calls: 3_000, rate: 500 / 3_000 });
  });
});

describe('CircuitBreaker: open and half-open', () => {
  it('stays open for the cool-down, then half-opens', () => {
    const p = policy({ cooldownMs: 5_000 });
    const breaker = openedAt(1_000, p);
    expect(breaker.state(5_999, p)).toBe('open');
    expect(breaker.available(5_999, p)).toBe(false);
    expect(breaker.admit(5_999, p)).toBeNull();
    expect(breaker.state(6_000, p)).toBe('half-open');
    expect(breaker.available(6_000, p)).toBe(true);
  });

  it('ignores failures reported while open (calls admitted before it opened)', () => {
    const p = policy();
    const breaker = openedAt(1_000, p);
    expect(breaker.failure(2_000, p, 'closed')).toBeNull();
    // The cool-down is not restarted by late failures.
    expect(breaker.halfOpensAt(p)).toBe(1_000 + p.cooldownMs);
  });

  it('lets only half_open_requests trials through at once', () => {
    const p = policy({ halfOpenRequests: 2 });
    const breaker = openedAt(0, p);
    const t = p.cooldownMs;
    expect(breaker.admit(t, p)).toBe('trial');
    expect(breaker.available(t, p)).toBe(true);
    expect(breaker.admit(t, p)).toBe('trial');
    expect(breaker.available(t, p)).toBe(false);
    expect(breaker.admit(t, p)).toBeNull();
    expect(breaker.state(t, p)).toBe('half-open');
    // No longer open, so there is no scheduled half-open time.
    expect(breaker.halfOpensAt(p)).toBeNull();
  });

  it('release frees a trial slot; releasing a non-trial admission frees nothing', () => {
    const p = policy({ halfOpenRequests: 1 });
    const breaker = openedAt(0, p);
    const t = p.cooldownMs;
    const trial = breaker.admit(t, p);
    expect(trial).toBe('trial');
    breaker.release('closed');
    breaker.release(null);
    expect(breaker.available(t, p)).toBe(false);
    breaker.release(trial);
    expect(breaker.available(t, p)).toBe(true);
    expect(breaker.admit(t, p)).toBe('trial');
  });

  it('a trial success closes it with a clean slate', () => {
    const p = policy({ consecutiveFailures: 3 });
    const breaker = openedAt(0, p);
    const t = p.cooldownMs;
    const trial = breaker.admit(t, p);
    expect(breaker.success(t + 10, p, trial)).toBe('closed');
    expect(breaker.state(t + 10, p)).toBe('closed');
    expect(breaker.reason).toBeNull();
    expect(breaker.consecutiveFailures()).toBe(0);
    // The old failures are gone from the window, or they would trip the rate rule straight away.
    expect(breaker.failureRate(t + 10, p)).toEqual({ calls: 0, rate: 0 });
    expect(breaker.failure(t + 20, p, 'closed')).toBeNull();
    expect(breaker.failure(t + 30, p, 'closed')).toBeNull();
    expect(breaker.state(t + 30, p)).toBe('closed');
  });

  it('a trial whose answer has begun closes it at once; the call is counted when it ends, as an ordinary one', () => {
    const p = policy({ consecutiveFailures: 1 });
    const breaker = openedAt(0, p);
    const t = p.cooldownMs;
    expect(breaker.admit(t, p)).toBe('trial');
    expect(breaker.trialAnswered()).toBe(true);
    expect(breaker.state(t, p)).toBe('closed');
    expect(breaker.admit(t + 1, p)).toBe('closed');
    // Only a half-open breaker closes this way.
    expect(breaker.trialAnswered()).toBe(false);
    // The stream then breaks: a failure like any other, which opens it again under consecutive_failures 1.
    expect(breaker.failure(t + 10, p, 'closed')).toBe('opened');
    expect(breaker.trialAnswered()).toBe(false);
  });

  it('a trial failure opens it again for another cool-down', () => {
    const p = policy({ cooldownMs: 5_000 });
    const breaker = openedAt(0, p);
    const t = 5_000;
    const trial = breaker.admit(t, p);
    expect(breaker.failure(t + 100, p, trial)).toBe('opened');
    expect(breaker.reason).toBe('a trial call failed');
    expect(breaker.state(t + 100, p)).toBe('open');
    expect(breaker.halfOpensAt(p)).toBe(t + 100 + 5_000);
    expect(breaker.state(t + 5_099, p)).toBe('open');
    // The next half-open period starts with fresh trial slots.
    expect(breaker.admit(t + 5_100, p)).toBe('trial');
  });

  it('outcomes of non-trial calls neither close nor reopen a half-open breaker', () => {
    const p = policy();
    const breaker = openedAt(0, p);
    const t = p.cooldownMs;
    breaker.admit(t, p);
    expect(breaker.success(t + 1, p, 'closed')).toBeNull();
    expect(breaker.state(t + 1, p)).toBe('half-open');
    expect(breaker.failure(t + 2, p, 'closed')).toBeNull();
    expect(breaker.state(t + 2, p)).toBe('half-open');
  });

  it('reads the policy per call, so one target can serve routes with different cool-downs', () => {
    const breaker = openedAt(0, policy({ cooldownMs: 5_000 }));
    expect(breaker.state(2_000, policy({ cooldownMs: 1_000 }))).toBe('half-open');
    expect(breaker.state(2_000, policy({ cooldownMs: 5_000 }))).toBe('open');
  });
});

describe('CircuitBreaker: disabled policy', () => {
  it('always admits and never opens', () => {
    const p = policy({ enabled: false, consecutiveFailures: 1, minRequests: 1 });
    const breaker = new CircuitBreaker();
    for (let i = 0; i < 10; i++) {
      expect(breaker.admit(i, p)).toBe('closed');
      expect(breaker.failure(i, p, 'closed')).toBeNull();
    }
    expect(breaker.available(10, p)).toBe(true);
    expect(breaker.state(10, p)).toBe('closed');
    // Failures are still counted, for the health view.
    expect(breaker.consecutiveFailures()).toBe(10);
  });

  it('admits even a breaker that an enabled policy opened', () => {
    const breaker = openedAt(0, policy());
    const off = policy({ enabled: false });
    expect(breaker.available(1, off)).toBe(true);
    expect(breaker.admit(1, off)).toBe('closed');
  });
});
