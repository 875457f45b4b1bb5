import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { BreakerPolicy } from '../../src/core/config.js';
import { HealthRegistry } from '../../src/routing/health-registry.js';
import { targetId } from '../../src/routing/resolve-target.js';
import { TargetHealth } from '../../src/routing/target-health.js';
import { makeTarget } from './targets.js';

const T0 = 1_700_000_000_000;
const HALF_LIFE = 20_000;

function fresh(): TargetHealth {
  return new TargetHealth('openai/m#k', 'openai/m');
}

describe('TargetHealth: success and failure', () => {
  it('starts fully healthy', () => {
    const health = fresh();
    expect(health.factor(T0, null)).toBe(1);
    expect(health.factor(T0, 100)).toBe(1);
    expect(health.latencyMs()).toBeNull();
    expect(health.pausedUntil(T0)).toBeNull();
    expect(health.snapshot(T0)).toMatchObject({ successRate: 1, latencyMs: null, calls: 0, failures: 0, inFlight: 0, lastError: null });
  });

  it('loses weight with the square of its success average', () => {
    const health = fresh();
    health.failed(T0, 'HTTP 500', null);
    expect(health.snapshot(T0).successRate).toBeCloseTo(0.7);
    expect(health.factor(T0, null)).toBeCloseTo(0.49);
    health.failed(T0, 'HTTP 502', null);
    expect(health.factor(T0, null)).toBeCloseTo(0.49 * 0.49);
    expect(health.snapshot(T0)).toMatchObject({ failures: 2, lastError: 'HTTP 502' });
  });

  it('regains weight through successes', () => {
    const health = fresh();
    health.failed(T0, 'x', null);
    health.succeeded(T0, null, {});
    // 0.7 + 0.3 * (1 - 0.7)
    expect(health.snapshot(T0).successRate).toBeCloseTo(0.79);
    for (let i = 0; i < 20; i++) health.succeeded(T0, null, {});
    expect(health.factor(T0, null)).toBeGreaterThan(0.99);
  });

  it('fades back toward healthy with a 20 s half-life when nothing is heard', () => {
    const health = fresh();
    health.failed(T0, 'x', null);
    expect(health.snapshot(T0 + HALF_LIFE).successRate).toBeCloseTo(0.85);
    expect(health.factor(T0 + HALF_LIFE, null)).toBeCloseTo(0.85 * 0.85);
    expect(health.factor(T0 + 20 * HALF_LIFE, null)).toBeCloseTo(1, 5);
  });

  it('composes fading with later observations', () => {
    const health = fresh();
    health.failed(T0, 'x', null);
    health.failed(T0 + HALF_LIFE, 'x', null);
    // 0.7 faded to 0.85, then a failure: 0.85 * 0.7.
    expect(health.snapshot(T0 + HALF_LIFE).successRate).toBeCloseTo(0.595);
  });

  it('never drops below the 0.03 floor, so it keeps being probed', () => {
    const health = fresh();
    for (let i = 0; i < 30; i++) health.failed(T0, 'x', null);
    expect(health.factor(T0, null)).toBe(0.03);
  });
});

describe('TargetHealth: latency', () => {
  it('keeps a moving average of time to first byte', () => {
    const health = fresh();
    health.succeeded(T0, 100, {});
    expect(health.latencyMs()).toBe(100);
    health.succeeded(T0, 200, {});
    expect(health.latencyMs()).toBeCloseTo(130);
    health.succeeded(T0, null, {});
    expect(health.latencyMs()).toBeCloseTo(130);
  });

  it('scales the factor by latency relative to the fastest peer, with slack and a dead band', () => {
    const slow = fresh();
    slow.succeeded(T0, 1000, {});
    // (100 + 25) / (1000 + 25), then the 0.8 dead band.
    expect(slow.factor(T0, 100)).toBeCloseTo(125 / 1025 / 0.8);
    expect(slow.factor(T0, 1000)).toBe(1);
    // Without a peer latency there is nothing to compare with.
    expect(slow.factor(T0, null)).toBe(1);
    const twice = fresh();
    twice.succeeded(T0, 200, {});
    expect(twice.factor(T0, 100)).toBeCloseTo(125 / 225 / 0.8);
    // Within about a quarter of the fastest peer is as good as the fastest: jitter must not skew weights.
    const near = fresh();
    near.succeeded(T0, 125, {});
    expect(near.factor(T0, 100)).toBe(1);
  });

  it('fades the latency penalty since the latency was last measured', () => {
    const slow = fresh();
    slow.succeeded(T0, 1000, {});
    const relative = 125 / 1025 / 0.8;
    expect(slow.factor(T0 + HALF_LIFE, 100)).toBeCloseTo(1 + (relative - 1) * 0.5);
    expect(slow.factor(T0 + 20 * HALF_LIFE, 100)).toBeCloseTo(1, 4);
  });

  it('lets a slow failure (timeout) raise the latency, never lower it', () => {
    const health = fresh();
    // No latency yet: a failure alone does not set one.
    health.failed(T0, 'timeout', 5000);
    expect(health.latencyMs()).toBeNull();
    health.succeeded(T0, 100, {});
    health.failed(T0, 'connection reset', 10);
    expect(health.latencyMs()).toBe(100);
    health.failed(T0, 'timeout', 1100);
    expect(health.latencyMs()).toBeCloseTo(400);
  });
});

describe('TargetHealth: rate limits', () => {
  it('pauses for the asked retry-after, or 1 s by default, and never shortens a pause', () => {
    const health = fresh();
    health.rateLimited(T0, 5_000, {});
    expect(health.pausedUntil(T0)).toBe(T0 + 5_000);
    expect(health.pausedUntil(T0 + 4_999)).toBe(T0 + 5_000);
    expect(health.pausedUntil(T0 + 5_000)).toBeNull();
    health.rateLimited(T0 + 1_000, 500, {});
    expect(health.pausedUntil(T0 + 1_600)).toBe(T0 + 5_000);

    const other = fresh();
    other.rateLimited(T0, null, {});
    expect(other.pausedUntil(T0)).toBe(T0 + 1_000);
    expect(other.snapshot(T0)).toMatchObject({ failures: 1, lastError: 'rate limited (429)', rateLimitedUntil: T0 + 1_000, recentRateLimits: 1 });
  });

  it('weighs a paused target down hard, and less once the pause ends', () => {
    const health = fresh();
    // The headers say half the budget is left, so only the 429 count and the pause act.
    health.rateLimited(T0, 1_000, { 'x-ratelimit-remaining-requests': '50', 'x-ratelimit-limit-requests': '100' });
    // 1 / (1 + 1) x 0.05 = 0.025, under the floor.
    expect(health.factor(T0, null)).toBe(0.03);
    const recent = 0.5 ** (1_000 / HALF_LIFE);
    expect(health.factor(T0 + 1_000, null)).toBeCloseTo(1 / (1 + recent));
    // The 429 count fades too, so the weight comes back with time.
    expect(health.factor(T0 + 20 * HALF_LIFE, null)).toBeCloseTo(1, 5);
  });

  it('treats a 429 without rate-limit headers as no budget left', () => {
    const health = fresh();
    health.rateLimited(T0, 1_000, {});
    expect(health.snapshot(T0).rateLimitRemaining).toBe(0);
    const recent = 0.5 ** (1_000 / HALF_LIFE);
    // The "no budget left" penalty (x0.1) fades back like every other observation.
    expect(health.factor(T0 + 1_000, null)).toBeCloseTo((1 / (1 + recent)) * (1 - 0.9 * recent));
    expect(health.factor(T0 + 600_000, null)).toBeGreaterThan(0.99);
    // A later success without headers forgets the budget reading.
    health.succeeded(T0 + 2_000, null, {});
    expect(health.snapshot(T0 + 2_000).rateLimitRemaining).toBeNull();
  });

  it('reads the remaining budget share from OpenAI and Anthropic headers', () => {
    const health = fresh();
    health.succeeded(T0, null, { 'x-ratelimit-remaining-requests': '5', 'x-ratelimit-limit-requests': '100' });
    expect(health.snapshot(T0).rateLimitRemaining).toBeCloseTo(0.05);
    // Under 10 % left: the factor scales with what is left.
    expect(health.factor(T0, null)).toBeCloseTo(0.5);

    health.succeeded(T0, null, { 'anthropic-ratelimit-requests-remaining': ['0'], 'anthropic-ratelimit-requests-limit': ['50'] });
    expect(health.snapshot(T0).rateLimitRemaining).toBe(0);
    // Nothing left still keeps a tenth, before the success factor.
    expect(health.factor(T0, null)).toBeCloseTo(0.1);

    health.succeeded(T0, null, { 'x-ratelimit-remaining-requests': '40', 'x-ratelimit-limit-requests': '100' });
    expect(health.factor(T0, null)).toBe(1);
  });

  it('ignores unusable rate-limit headers and clamps the share', () => {
    const health = fresh();
    const share = (headers: Record<string, string>): number | null => {
      health.succeeded(T0, null, headers);
      return health.snapshot(T0).rateLimitRemaining;
    };
    expect(share({ 'x-ratelimit-remaining-requests': '5' })).toBeNull();
    expect(share({ 'x-ratelimit-remaining-requests': '5', 'x-ratelimit-limit-requests': '0' })).toBeNull();
    expect(share({ 'x-ratelimit-remaining-requests': 'many', 'x-ratelimit-limit-requests': '10' })).toBeNull();
    expect(share({ 'x-ratelimit-remaining-requests': '20', 'x-ratelimit-limit-requests': '10' })).toBe(1);
  });
});

describe('TargetHealth: bookkeeping', () => {
  it('counts calls and in-flight calls; every kind of end frees one', () => {
    const health = fresh();
    for (let i = 0; i < 4; i++) health.started(T0);
    expect(health.snapshot(T0)).toMatchObject({ calls: 4, inFlight: 4 });
    health.succeeded(T0 + 1, 10, {});
    health.failed(T0 + 2, 'x', null);
    health.rateLimited(T0 + 3, null, {});
    health.ended();
    expect(health.snapshot(T0 + 4)).toMatchObject({ calls: 4, inFlight: 0, failures: 2 });
    health.ended();
    expect(health.snapshot(T0 + 4).inFlight).toBe(0);
    expect(health.lastUsedAt).toBe(T0);
  });

  it('reports its request rate', () => {
    const health = fresh();
    for (let i = 0; i < 30; i++) health.started(T0 + i);
    expect(health.snapshot(T0 + 100).rps).toBe(3);
  });

  it('reports its breaker for the health view', () => {
    const p: BreakerPolicy = { enabled: true, consecutiveFailures: 2, failureRate: 0.5, windowMs: 10_000, minRequests: 100, cooldownMs: 5_000, halfOpenRequests: 1 };
    const health = fresh();
    health.breaker.success(T0, p, 'closed');
    health.breaker.failure(T0, p, 'closed');
    expect(health.breakerPolicyState(T0, p)).toEqual({ state: 'closed', consecutiveFailures: 1, failureRate: 0.5, windowCalls: 2, halfOpensAt: null, reason: null });
    health.breaker.failure(T0 + 1, p, 'closed');
    expect(health.breakerPolicyState(T0 + 1, p)).toMatchObject({ state: 'open', halfOpensAt: T0 + 5_001, reason: '2 consecutive failures' });
  });
});

describe('HealthRegistry', () => {
  const policy: BreakerPolicy = { enabled: true, consecutiveFailures: 2, failureRate: 0.5, windowMs: 10_000, minRequests: 100, cooldownMs: 5_000, halfOpenRequests: 1 };

  function setup(): { registry: HealthRegistry; opened: unknown[]; closed: unknown[] } {
    const bus = new EventBus();
    const opened: unknown[] = [];
    const closed: unknown[] = [];
    bus.on('breaker.opened', (event) => opened.push(event));
    bus.on('breaker.closed', (event) => closed.push(event));
    return { registry: new HealthRegistry(bus), opened, closed };
  }

  it('keys health by provider, model and key id', () => {
    const { registry } = setup();
    const a = makeTarget({ name: 'lab', model: 'm1' });
    expect(targetId(a)).toBe('lab/m1#test-key');
    expect(targetId(makeTarget({ name: 'lab', model: 'm1', apiKey: null }))).toBe('lab/m1#none');
    expect(registry.peek(a)).toBeUndefined();
    const health = registry.get(a);
    expect(health.id).toBe('lab/m1#test-key');
    expect(health.label).toBe('lab/m1');
    // A new Target object for the same key (a config reload) keeps its health.
    expect(registry.get(makeTarget({ name: 'lab', model: 'm1' }))).toBe(health);
    expect(registry.peek(a)).toBe(health);
    expect(registry.get({ ...a, keyId: 'other-key' })).not.toBe(health);
    expect(registry.get(makeTarget({ name: 'lab', model: 'm2' }))).not.toBe(health);
  });

  it('emits breaker.opened once when failures open a breaker', () => {
    const { registry, opened, closed } = setup();
    const health = registry.get(makeTarget({ name: 'lab', model: 'm' }));
    registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'HTTP 500', latencyMs: 20 }, T0);
    expect(opened).toEqual([]);
    registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'HTTP 500', latencyMs: 20 }, T0 + 1);
    expect(opened).toEqual([{ target: 'lab/m#test-key', label: 'lab/m', reason: '2 consecutive failures', cooldownMs: 5_000 }]);
    registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'HTTP 500', latencyMs: 20 }, T0 + 2);
    expect(opened).toHaveLength(1);
    expect(closed).toEqual([]);
    expect(health.snapshot(T0 + 2)).toMatchObject({ failures: 3, lastError: 'HTTP 500' });
  });

  it('emits breaker.closed when a trial call succeeds', () => {
    const { registry, opened, closed } = setup();
    const health = registry.get(makeTarget({ name: 'lab', model: 'm' }));
    for (let i = 0; i < 2; i++) registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'x', latencyMs: null }, T0);
    const at = T0 + policy.cooldownMs;
    const trial = health.breaker.admit(at, policy);
    expect(trial).toBe('trial');
    registry.finished(health, trial, policy, { kind: 'success', latencyMs: 80, headers: {} }, at + 80);
    expect(closed).toEqual([{ target: 'lab/m#test-key', label: 'lab/m' }]);
    expect(opened).toHaveLength(1);
    expect(health.breaker.state(at + 80, policy)).toBe('closed');
    expect(health.latencyMs()).toBe(80);
  });

  it('emits breaker.opened again when a trial fails', () => {
    const { registry, opened } = setup();
    const health = registry.get(makeTarget({ name: 'lab', model: 'm' }));
    for (let i = 0; i < 2; i++) registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'x', latencyMs: null }, T0);
    const at = T0 + policy.cooldownMs;
    registry.finished(health, health.breaker.admit(at, policy), policy, { kind: 'failure', reason: 'x', latencyMs: null }, at + 1);
    expect(opened).toHaveLength(2);
    expect(opened[1]).toMatchObject({ reason: 'a trial call failed' });
  });

  it('does not count a 429 against the breaker, but pauses the target and frees its trial slot', () => {
    const { registry, opened } = setup();
    const health = registry.get(makeTarget({ name: 'lab', model: 'm' }));
    for (let i = 0; i < 10; i++) registry.finished(health, 'closed', policy, { kind: 'rate-limited', retryAfterMs: 2_000, headers: {} }, T0 + i);
    expect(opened).toEqual([]);
    expect(health.breaker.state(T0 + 10, policy)).toBe('closed');
    expect(health.breaker.failureRate(T0 + 10, policy).calls).toBe(0);
    expect(health.pausedUntil(T0 + 10)).toBe(T0 + 9 + 2_000);

    for (let i = 0; i < 2; i++) registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'x', latencyMs: null }, T0 + 20);
    const at = T0 + 20 + policy.cooldownMs;
    const trial = health.breaker.admit(at, policy);
    expect(health.breaker.available(at, policy)).toBe(false);
    registry.finished(health, trial, policy, { kind: 'rate-limited', retryAfterMs: null, headers: {} }, at);
    expect(health.breaker.available(at, policy)).toBe(true);
    expect(health.breaker.state(at, policy)).toBe('half-open');
  });

  it('treats a neutral end as saying nothing, only freeing the call and its trial slot', () => {
    const { registry, opened, closed } = setup();
    const health = registry.get(makeTarget({ name: 'lab', model: 'm' }));
    for (let i = 0; i < 2; i++) registry.finished(health, 'closed', policy, { kind: 'failure', reason: 'x', latencyMs: null }, T0);
    const at = T0 + policy.cooldownMs;
    registry.started(health, at);
    const trial = health.breaker.admit(at, policy);
    registry.finished(health, trial, policy, { kind: 'neutral' }, at + 5);
    expect(health.breaker.available(at + 5, policy)).toBe(true);
    expect(health.breaker.state(at + 5, policy)).toBe('half-open');
    expect(health.snapshot(at + 5)).toMatchObject({ inFlight: 0, failures: 2 });
    expect(opened).toHaveLength(1);
    expect(closed).toEqual([]);
  });

  it('measures requests per second per label, all keys together', () => {
    const { registry } = setup();
    const one = registry.get(makeTarget({ name: 'lab', model: 'm' }));
    const two = registry.get({ ...makeTarget({ name: 'lab', model: 'm' }), keyId: 'second-key' });
    const elsewhere = registry.get(makeTarget({ name: 'other', model: 'm' }));
    for (let i = 0; i < 20; i++) registry.started(one, T0 + i);
    for (let i = 0; i < 10; i++) registry.started(two, T0 + i);
    registry.started(elsewhere, T0);
    expect(registry.rps('lab/m', T0 + 500)).toBe(3);
    expect(registry.rps('other/m', T0 + 500)).toBeCloseTo(0.1);
    expect(registry.rps('nobody/m', T0 + 500)).toBe(0);
    expect(registry.rps('lab/m', T0 + 11_000)).toBe(0);
    expect(one.snapshot(T0 + 500).rps).toBe(2);
  });

  it('shares one balancer per group name', () => {
    const { registry } = setup();
    expect(registry.balancer('route-a')).toBe(registry.balancer('route-a'));
    expect(registry.balancer('route-a')).not.toBe(registry.balancer('route-b'));
  });

  it('evicts the idlest targets when it holds too many', () => {
    const { registry } = setup();
    const base = makeTarget({ name: 'lab', model: 'm' });
    const busy = { ...base, model: 'busy' };
    registry.started(registry.get(busy), T0);
    const idle = { ...base, model: 'idle' };
    registry.get(idle);
    for (let i = 0; registry.peek({ ...base, model: `filler-${i}` }) === undefined && i < 9_998; i++) registry.get({ ...base, model: `filler-${i}` });
    expect(registry.peek(idle)).toBeDefined();
    // The 10,001st target makes room by dropping never-used ones first.
    registry.get({ ...base, model: 'newcomer' });
    expect(registry.peek(idle)).toBeUndefined();
    expect(registry.peek(busy)).toBeDefined();
    expect(registry.peek({ ...base, model: 'newcomer' })).toBeDefined();
  });
});
