import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { DEFAULT_ROUTING_POLICY, resolveRoutingPolicy } from '../../src/config/routing-policy.js';
import { type BreakerPolicy, type RetryPolicy, type RoutingPolicy } from '../../src/core/config.js';
import { GatewayError } from '../../src/core/errors.js';
import { AttemptPlan, effectiveWeights, type Attempt } from '../../src/routing/attempt-plan.js';
import type { CandidateGroup } from '../../src/core/plan.js';
import { HealthRegistry } from '../../src/routing/health-registry.js';
import { targetId } from '../../src/routing/resolve-target.js';
import { plannedFailure } from '../../src/routing/plan-errors.js';
import type { Candidate } from '../../src/core/plan.js';
import { makeTarget } from './targets.js';

const T0 = 1_700_000_000_000;

function candidate(name: string, weight = 1, keyId = 'test-key'): Candidate {
  const target = { ...makeTarget({ name, model: 'm' }), keyId };
  return { target, weight, label: `${name}/m`, id: targetId(target) };
}

function group(name: string, ...candidates: Candidate[]): CandidateGroup {
  return { name, candidates };
}

// Adaptive balancing is off unless a test is about it, so picks follow the configured weights alone.
function policy(overrides: { retry?: Partial<RetryPolicy>; breaker?: Partial<BreakerPolicy>; adaptive?: boolean } = {}): RoutingPolicy {
  return {
    ...DEFAULT_ROUTING_POLICY,
    retry: { ...DEFAULT_ROUTING_POLICY.retry, ...overrides.retry },
    breaker: { ...DEFAULT_ROUTING_POLICY.breaker, ...overrides.breaker },
    adaptive: overrides.adaptive ?? false,
  };
}

function registry(): HealthRegistry {
  return new HealthRegistry(new EventBus());
}

const half = (): number => 0.5;

/** Opens a candidate's breaker at `at` the way real traffic would: consecutive failures through the registry. */
function openBreaker(reg: HealthRegistry, c: Candidate, p: RoutingPolicy, at: number): void {
  const health = reg.get(c);
  for (let i = 0; i < p.breaker.consecutiveFailures; i++) reg.finished(health, 'closed', p.breaker, { kind: 'failure', reason: 'HTTP 500', latencyMs: null }, at);
  expect(health.breaker.state(at, p.breaker)).toBe('open');
}

function rateLimit(reg: HealthRegistry, c: Candidate, p: RoutingPolicy, at: number, retryAfterMs: number): void {
  reg.finished(reg.get(c), 'closed', p.breaker, { kind: 'rate-limited', retryAfterMs, headers: {} }, at);
}

function drain(plan: AttemptPlan, now: number): Attempt[] {
  const out: Attempt[] = [];
  for (let attempt = plan.next(now); attempt; attempt = plan.next(now)) out.push(attempt);
  return out;
}

describe('AttemptPlan: first pass', () => {
  it('tries each candidate once, the route group before its fallbacks', () => {
    const [a, b, c] = [candidate('a'), candidate('b'), candidate('c')];
    const plan = new AttemptPlan([group('route', a, b), group('fallback', c)], policy(), registry(), T0, half);
    const attempts = drain(plan, T0);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.slice(0, 2).map((x) => x.candidate))).toEqual(new Set([a, b]));
    expect(attempts[2]?.candidate).toBe(c);
    expect(attempts.map((x) => x.group)).toEqual([0, 0, 1]);
    expect(attempts.map((x) => x.delayMs)).toEqual([0, 0, 0]);
    expect(attempts.map((x) => x.admission)).toEqual(['closed', 'closed', 'closed']);
    expect(plan.attempts).toBe(3);
    expect(plan.exhausted).toBe('attempts');
  });

  it('allows max(3, candidates) attempts unless the policy sets a number', () => {
    const reg = registry();
    expect(new AttemptPlan([group('r', candidate('a'))], policy(), reg, T0).maxAttempts).toBe(3);
    const five = [group('r', candidate('a'), candidate('b'), candidate('c')), group('f', candidate('d'), candidate('e'))];
    expect(new AttemptPlan(five, policy(), reg, T0).maxAttempts).toBe(5);
    const two = new AttemptPlan(five, policy({ retry: { maxAttempts: 2 } }), reg, T0);
    expect(two.maxAttempts).toBe(2);
    expect(drain(two, T0)).toHaveLength(2);
    expect(two.exhausted).toBe('attempts');
  });

  it('skips a target whose breaker is open', () => {
    const reg = registry();
    const p = policy({ breaker: { consecutiveFailures: 1 } });
    const [a, b] = [candidate('a', 10), candidate('b', 1)];
    openBreaker(reg, a, p, T0);
    const attempts = drain(new AttemptPlan([group('r', a, b)], p, reg, T0 + 1, half), T0 + 1);
    expect(attempts).toHaveLength(3);
    expect(attempts.every((x) => x.candidate === b)).toBe(true);
  });

  it('gives a half-open target to one request as a trial; others go elsewhere until the slot is freed', () => {
    const reg = registry();
    const p = policy({ breaker: { consecutiveFailures: 1, cooldownMs: 1_000, halfOpenRequests: 1 } });
    const [a, b] = [candidate('a'), candidate('b')];
    openBreaker(reg, a, p, T0);
    const groups = [group('r', a), group('f', b)];
    const at = T0 + 1_000;
    const first = new AttemptPlan(groups, p, reg, at, half).next(at);
    expect(first).toMatchObject({ candidate: a, admission: 'trial' });
    const second = new AttemptPlan(groups, p, reg, at, half).next(at);
    expect(second).toMatchObject({ candidate: b, admission: 'closed' });
    reg.finished(first!.health, first!.admission, p.breaker, { kind: 'neutral' }, at);
    expect(new AttemptPlan(groups, p, reg, at, half).next(at)).toMatchObject({ candidate: a, admission: 'trial' });
  });

  it('skips a target paused by a 429 while another can take the call', () => {
    const reg = registry();
    const p = policy();
    const [a, b] = [candidate('a'), candidate('b')];
    rateLimit(reg, a, p, T0, 5_000);
    const plan = new AttemptPlan([group('r', a), group('f', b)], p, reg, T0, half);
    expect(plan.next(T0 + 10)).toMatchObject({ candidate: b, group: 1, delayMs: 0 });
    // On the retry pass the paused target is back, after its retry-after.
    const retry = plan.next(T0 + 20);
    expect(retry?.candidate).toBe(a);
    expect(retry?.delayMs).toBe(4_980);
  });

  it('still calls one target at once when every target is paused and nothing was tried', () => {
    const reg = registry();
    const p = policy();
    const [a, b] = [candidate('a'), candidate('b')];
    rateLimit(reg, a, p, T0, 5_000);
    rateLimit(reg, b, p, T0, 8_000);
    const plan = new AttemptPlan([group('r', a, b)], p, reg, T0, half);
    const first = plan.next(T0 + 100);
    expect(first?.delayMs).toBe(0);
    // Only retries wait for retry-after.
    const second = plan.next(T0 + 200);
    expect(second).not.toBeNull();
    const pausedUntil = second!.health.pausedUntil(T0 + 200)!;
    expect(second!.delayMs).toBeGreaterThanOrEqual(pausedUntil - (T0 + 200));
    expect(second!.delayMs).toBeGreaterThanOrEqual(4_800);
  });

  it('reports all-open when every breaker is open', () => {
    const reg = registry();
    const p = policy({ breaker: { consecutiveFailures: 1 } });
    const [a, b] = [candidate('a'), candidate('b')];
    openBreaker(reg, a, p, T0);
    openBreaker(reg, b, p, T0);
    const plan = new AttemptPlan([group('r', a), group('f', b)], p, reg, T0 + 1, half);
    expect(plan.next(T0 + 1)).toBeNull();
    expect(plan.exhausted).toBe('all-open');
    expect(plan.attempts).toBe(0);
  });
});

describe('AttemptPlan: retries', () => {
  it('retries with exponential backoff and full jitter after the first pass', () => {
    const [a, b] = [candidate('a'), candidate('b')];
    const p = policy({ retry: { maxAttempts: 6, initialDelayMs: 100, maxDelayMs: 5_000 } });
    const attempts = drain(new AttemptPlan([group('r', a, b)], p, registry(), T0, half), T0);
    expect(attempts.map((x) => x.delayMs)).toEqual([0, 0, 50, 100, 200, 400]);
    // Each pass tries every candidate once.
    for (const pass of [attempts.slice(0, 2), attempts.slice(2, 4), attempts.slice(4, 6)]) {
      expect(new Set(pass.map((x) => x.candidate))).toEqual(new Set([a, b]));
    }
  });

  it('starts each retry pass again from the route group', () => {
    const [a, c] = [candidate('a'), candidate('c')];
    const attempts = drain(new AttemptPlan([group('r', a), group('f', c)], policy({ retry: { maxAttempts: 5 } }), registry(), T0, half), T0);
    expect(attempts.map((x) => x.candidate.label)).toEqual(['a/m', 'c/m', 'a/m', 'c/m', 'a/m']);
    expect(attempts.map((x) => x.group)).toEqual([0, 1, 0, 1, 0]);
  });

  it('waits at least as long as the retry-after, and at least the backoff', () => {
    const reg = registry();
    const p = policy();
    const a = candidate('a');
    const plan = new AttemptPlan([group('r', a)], p, reg, T0, half);
    expect(plan.next(T0)?.delayMs).toBe(0);
    rateLimit(reg, a, p, T0 + 10, 3_000);
    expect(plan.next(T0 + 10)?.delayMs).toBe(3_000);
    // A retry-after shorter than the backoff (0.5 x 200) does not shorten it.
    rateLimit(reg, a, p, T0 + 3_010, 5);
    expect(plan.next(T0 + 3_010)?.delayMs).toBe(100);
  });

  it('stops at the deadline', () => {
    const a = candidate('a');
    const plan = new AttemptPlan([group('r', a)], policy({ retry: { deadlineMs: 1_000 } }), registry(), T0, half);
    expect(plan.next(T0 + 999)).not.toBeNull();
    expect(plan.next(T0 + 1_000)).toBeNull();
    expect(plan.exhausted).toBe('deadline');
    expect(plan.attempts).toBe(1);
  });

  it('stops rather than plan a wait that would end past the deadline', () => {
    const reg = registry();
    const p = policy({ retry: { deadlineMs: 5_000 } });
    const a = candidate('a');
    rateLimit(reg, a, p, T0, 10_000);
    const plan = new AttemptPlan([group('r', a)], p, reg, T0, half);
    expect(plan.next(T0)?.delayMs).toBe(0);
    expect(plan.next(T0 + 1)).toBeNull();
    expect(plan.exhausted).toBe('deadline');
    expect(plan.attempts).toBe(1);
  });

  it('keeps retrying a fallback while the route target is paused past the deadline', () => {
    const reg = registry();
    const p = policy({ retry: { maxAttempts: 3, deadlineMs: 60_000, initialDelayMs: 10, maxDelayMs: 10 } });
    const [a, b] = [candidate('a'), candidate('b')];
    rateLimit(reg, a, p, T0, 3_600_000);
    const plan = new AttemptPlan([group('route', a), group('fallback', b)], p, reg, T0, half);
    const attempts = drain(plan, T0 + 1);
    expect(attempts.map((attempt) => attempt.candidate.label)).toEqual(['b/m', 'b/m', 'b/m']);
    expect(plan.exhausted).toBe('attempts');
  });

  it('gives back the trial slot it took when the wait would pass the deadline', () => {
    const reg = registry();
    const p = policy({ retry: { deadlineMs: 5_000, initialDelayMs: 10_000, maxDelayMs: 10_000 }, breaker: { consecutiveFailures: 1, cooldownMs: 100 } });
    const a = candidate('a');
    const plan = new AttemptPlan([group('r', a)], p, reg, T0, () => 0.999);
    const first = plan.next(T0);
    expect(first?.admission).toBe('closed');
    reg.finished(first!.health, first!.admission, p.breaker, { kind: 'failure', reason: 'HTTP 500', latencyMs: null }, T0 + 50);
    // Half-open at T0 + 150; the backoff (9,990 ms) would end past the deadline.
    expect(plan.next(T0 + 200)).toBeNull();
    expect(plan.exhausted).toBe('deadline');
    const health = reg.get(a);
    expect(health.breaker.available(T0 + 200, p.breaker)).toBe(true);
    expect(health.breaker.admit(T0 + 200, p.breaker)).toBe('trial');
  });

  it('reports all-open when the retry pass finds every breaker opened by the first pass', () => {
    const reg = registry();
    const p = policy({ breaker: { consecutiveFailures: 1 } });
    const a = candidate('a');
    const plan = new AttemptPlan([group('r', a)], p, reg, T0, half);
    const first = plan.next(T0)!;
    reg.finished(first.health, first.admission, p.breaker, { kind: 'failure', reason: 'HTTP 500', latencyMs: null }, T0 + 1);
    expect(plan.next(T0 + 2)).toBeNull();
    expect(plan.exhausted).toBe('all-open');
  });
});

describe('AttemptPlan: weighted and adaptive choice', () => {
  function firstPickShare(reg: HealthRegistry, groups: CandidateGroup[], p: RoutingPolicy, now: number, picks: number, of: Candidate): number {
    let hits = 0;
    for (let i = 0; i < picks; i++) {
      if (new AttemptPlan(groups, p, reg, now, half).next(now)?.candidate === of) hits++;
    }
    return hits / picks;
  }

  it('splits first picks 3:1 within 2 points over 10,000 requests with adaptive balancing off', () => {
    const [a, b] = [candidate('a', 3), candidate('b', 1)];
    const share = firstPickShare(registry(), [group('r', a, b)], policy({ adaptive: false }), T0, 10_000, a);
    expect(Math.abs(share - 0.75)).toBeLessThanOrEqual(0.02);
  });

  it('ignores health when adaptive balancing is off', () => {
    const reg = registry();
    const p = policy({ adaptive: false, breaker: { enabled: false } });
    const [a, b] = [candidate('a'), candidate('b')];
    for (let i = 0; i < 5; i++) reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'failure', reason: 'x', latencyMs: null }, T0);
    expect(firstPickShare(reg, [group('r', a, b)], p, T0, 1_000, a)).toBeCloseTo(0.5, 2);
  });

  describe('with adaptive balancing on', () => {
    const p = policy({ adaptive: true, breaker: { enabled: false } });
    const [a, b] = [candidate('a'), candidate('b')];
    const groups = [group('r', a, b)];

    /** `a` answered slowly, then failed three times; `b` is fast and well. */
    function degraded(): HealthRegistry {
      const reg = registry();
      reg.finished(reg.get(b), 'closed', p.breaker, { kind: 'success', latencyMs: 100, headers: {} }, T0);
      reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'success', latencyMs: 2_000, headers: {} }, T0);
      for (let i = 0; i < 3; i++) reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'failure', reason: 'HTTP 500', latencyMs: null }, T0);
      return reg;
    }

    it('splits evenly between equally healthy targets', () => {
      expect(firstPickShare(registry(), groups, p, T0, 1_000, a)).toBeCloseTo(0.5, 2);
    });

    it('moves picks away from a slow, failing target but keeps probing it', () => {
      const share = firstPickShare(degraded(), groups, p, T0, 1_000, a);
      expect(share).toBeLessThan(0.05);
      expect(share).toBeGreaterThan(0);
    });

    it('moves picks back once the target records good outcomes', () => {
      const reg = degraded();
      for (let i = 0; i < 20; i++) reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'success', latencyMs: 100, headers: {} }, T0);
      expect(firstPickShare(reg, groups, p, T0, 1_000, a)).toBeGreaterThan(0.45);
    });

    it('moves picks back as time passes without news', () => {
      const reg = degraded();
      const atOnce = firstPickShare(reg, groups, p, T0, 1_000, a);
      const halfLifeLater = firstPickShare(reg, groups, p, T0 + 20_000, 1_000, a);
      const muchLater = firstPickShare(reg, groups, p, T0 + 600_000, 1_000, a);
      expect(halfLifeLater).toBeGreaterThan(atOnce + 0.1);
      expect(muchLater).toBeGreaterThan(halfLifeLater);
      expect(muchLater).toBeGreaterThan(0.45);
    });

    it('moves picks away from a target that keeps hitting rate limits', () => {
      const reg = registry();
      // The headers say budget is left, so only the recent 429s weigh on it.
      const headers = { 'x-ratelimit-remaining-requests': '50', 'x-ratelimit-limit-requests': '100' };
      for (let i = 0; i < 3; i++) reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'rate-limited', retryAfterMs: 100, headers }, T0);
      // The pause is over, but the 429s still count against its share: about 1 / (1 + 2.9) of b's.
      const share = firstPickShare(reg, groups, p, T0 + 1_000, 1_000, a);
      expect(share).toBeLessThan(0.25);
      expect(share).toBeGreaterThan(0.15);
    });
  });
});

describe('effectiveWeights', () => {
  const [a, b] = [candidate('a', 3), candidate('b', 1)];
  const routeGroup = group('r', a, b);

  it('is the configured weights when adaptive balancing is off, and 0 for an open breaker', () => {
    const reg = registry();
    const p = policy({ adaptive: false, breaker: { consecutiveFailures: 2 } });
    reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'failure', reason: 'x', latencyMs: null }, T0);
    expect(effectiveWeights(routeGroup, p, reg, T0)).toEqual([3, 1]);
    openBreaker(reg, b, p, T0);
    expect(effectiveWeights(routeGroup, p, reg, T0)).toEqual([3, 0]);
    expect(effectiveWeights(routeGroup, p, reg, T0 + p.breaker.cooldownMs)).toEqual([3, 1]);
  });

  it('scales weights by health when adaptive balancing is on', () => {
    const reg = registry();
    const p = policy({ adaptive: true, breaker: { enabled: false } });
    expect(effectiveWeights(routeGroup, p, reg, T0)).toEqual([3, 1]);
    reg.finished(reg.get(a), 'closed', p.breaker, { kind: 'failure', reason: 'x', latencyMs: null }, T0);
    const [wa, wb] = effectiveWeights(routeGroup, p, reg, T0);
    expect(wa).toBeCloseTo(3 * 0.49);
    expect(wb).toBe(1);
  });
});

describe('plannedFailure', () => {
  const upstream = new GatewayError({
    status: 502,
    type: 'upstream_error',
    code: 'upstream_failed',
    param: 'model',
    message: 'Upstream answered 500.',
    retryable: true,
    headers: { 'x-upstream': 'a' },
    upstreamStatus: 500,
  });

  it('returns the last error untouched after a single attempt', () => {
    const plan = new AttemptPlan([group('r', candidate('a'))], policy(), registry(), T0, half);
    plan.next(T0);
    expect(plannedFailure(plan, upstream, registry(), T0)).toBe(upstream);
  });

  it('returns the last error unchanged after several attempts (the count travels in x-tollgate-attempts)', () => {
    const reg = registry();
    const plan = new AttemptPlan([group('r', candidate('a'), candidate('b'))], policy(), reg, T0, half);
    drain(plan, T0);
    expect(plan.attempts).toBe(3);
    const error = plannedFailure(plan, upstream, reg, T0);
    expect(error).toBe(upstream);
    expect(error.message).toBe('Upstream answered 500.');
    expect(error).toMatchObject({ status: 502, type: 'upstream_error', code: 'upstream_failed', param: 'model', retryable: true, headers: { 'x-upstream': 'a' }, upstreamStatus: 500 });
    const timeout = new GatewayError({ status: 504, type: 'timeout_error', code: null, message: 'Timed out.' });
    expect(plannedFailure(plan, timeout, reg, T0)).toBe(timeout);
    expect(timeout.message).toBe('Timed out.');
  });

  it('answers 503 with the first half-open time as retry-after when every breaker is open', () => {
    const reg = registry();
    const p = policy({ breaker: { consecutiveFailures: 1, cooldownMs: 30_000 } });
    // Two keys of one model share a label; the message names it once.
    const [a1, a2, b] = [candidate('a', 1, 'k1'), candidate('a', 1, 'k2'), candidate('b')];
    openBreaker(reg, a1, p, T0);
    openBreaker(reg, a2, p, T0 + 10_000);
    openBreaker(reg, b, p, T0 + 2_000);
    const plan = new AttemptPlan([group('r', a1, a2), group('f', b)], p, reg, T0 + 5_000, half);
    expect(plan.next(T0 + 5_000)).toBeNull();
    const error = plannedFailure(plan, null, reg, T0 + 5_000);
    expect(error).toMatchObject({ status: 503, type: 'service_unavailable', code: 'all_targets_unavailable', headers: { 'retry-after': '25' } });
    expect(error.message).toContain('(a/m, b/m)');
    expect(error.message).toContain('Try again in 25 s.');
  });

  it('rounds the retry-after up, and never below 1 s', () => {
    const reg = registry();
    const p = policy({ breaker: { consecutiveFailures: 1, cooldownMs: 30_000 } });
    const a = candidate('a');
    openBreaker(reg, a, p, T0);
    const plan = new AttemptPlan([group('r', a)], p, reg, T0, half);
    plan.next(T0 + 27_500);
    expect(plannedFailure(plan, null, reg, T0 + 27_500).headers['retry-after']).toBe('3');
    // Half-open with its one trial slot taken by another request: no time to promise, so 1 s.
    reg.get(a).breaker.admit(T0 + 30_000, p.breaker);
    const later = new AttemptPlan([group('r', a)], p, reg, T0 + 30_000, half);
    expect(later.next(T0 + 30_000)).toBeNull();
    expect(later.exhausted).toBe('all-open');
    expect(plannedFailure(later, null, reg, T0 + 30_000).headers['retry-after']).toBe('1');
  });

  it('says rate limited when the deadline came while targets were paused', () => {
    const reg = registry();
    const p = policy({ retry: { deadlineMs: 1_000 } });
    const a = candidate('a');
    rateLimit(reg, a, p, T0, 30_000);
    const plan = new AttemptPlan([group('r', a)], p, reg, T0, half);
    expect(plan.next(T0 + 1_000)).toBeNull();
    expect(plan.exhausted).toBe('deadline');
    const error = plannedFailure(plan, null, reg, T0 + 1_000);
    expect(error).toMatchObject({ status: 503, code: 'all_targets_rate_limited', headers: { 'retry-after': '29' } });
    expect(error.message).toContain('rate limits');
  });
});

describe('resolveRoutingPolicy', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_ROUTING_POLICY).toEqual({
      retry: { maxAttempts: null, initialDelayMs: 100, maxDelayMs: 5_000, deadlineMs: 60_000 },
      breaker: { enabled: true, consecutiveFailures: 5, failureRate: 0.5, windowMs: 30_000, minRequests: 10, cooldownMs: 30_000, halfOpenRequests: 1 },
      adaptive: true,
      fallbackOnClientErrors: false,
    });
  });

  it('is the base when no layer sets anything', () => {
    expect(resolveRoutingPolicy(DEFAULT_ROUTING_POLICY)).toEqual(DEFAULT_ROUTING_POLICY);
    expect(resolveRoutingPolicy(DEFAULT_ROUTING_POLICY, undefined, {}, { retry: {}, breaker: {} })).toEqual(DEFAULT_ROUTING_POLICY);
  });

  it('merges field by field; the first layer that sets a field wins', () => {
    const route = { retry: { max_attempts: 2 }, breaker: { enabled: false }, adaptive: false };
    const global = { retry: { max_attempts: 9, deadline_ms: 1_000 }, breaker: { enabled: true, cooldown_ms: 10 }, adaptive: true, fallback_on_client_errors: true };
    const resolved = resolveRoutingPolicy(DEFAULT_ROUTING_POLICY, undefined, route, global);
    expect(resolved).toEqual({
      retry: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 5_000, deadlineMs: 1_000 },
      breaker: { ...DEFAULT_ROUTING_POLICY.breaker, enabled: false, cooldownMs: 10 },
      adaptive: false,
      fallbackOnClientErrors: true,
    });
    // The base is not touched.
    expect(DEFAULT_ROUTING_POLICY.retry.maxAttempts).toBeNull();
    expect(DEFAULT_ROUTING_POLICY.breaker.enabled).toBe(true);
  });

  it('maps every snake_case field', () => {
    const resolved = resolveRoutingPolicy(DEFAULT_ROUTING_POLICY, {
      retry: { max_attempts: 4, initial_delay_ms: 1, max_delay_ms: 2, deadline_ms: 3 },
      breaker: { enabled: false, consecutive_failures: 6, failure_rate: 0.7, window_ms: 8, min_requests: 9, cooldown_ms: 10, half_open_requests: 11 },
      adaptive: false,
      fallback_on_client_errors: true,
    });
    expect(resolved).toEqual({
      retry: { maxAttempts: 4, initialDelayMs: 1, maxDelayMs: 2, deadlineMs: 3 },
      breaker: { enabled: false, consecutiveFailures: 6, failureRate: 0.7, windowMs: 8, minRequests: 9, cooldownMs: 10, halfOpenRequests: 11 },
      adaptive: false,
      fallbackOnClientErrors: true,
    });
  });
});
