import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { DEFAULT_ROUTING_POLICY } from '../../src/config/routing-policy.js';
import type { Candidate, CandidateGroup } from '../../src/core/plan.js';
import { ModelLimitGate } from '../../src/governance/model-limits.js';
import { SlidingWindowLimiter } from '../../src/governance/rate-limiter.js';
import { AttemptPlan, type Attempt } from '../../src/routing/attempt-plan.js';
import { HealthRegistry } from '../../src/routing/health-registry.js';
import { targetId } from '../../src/routing/resolve-target.js';
import { makeTarget } from './targets.js';

const T0 = 1_700_000_000_000;
const KEY = { id: 'k1', name: 'limited' };

function candidate(name: string, keyId = 'test-key'): Candidate {
  const target = { ...makeTarget({ name, model: 'm' }), keyId };
  return { target, weight: 1, label: `${name}/m`, id: targetId(target) };
}

function setup(limits: Record<string, number>) {
  let now = T0;
  const limiter = new SlidingWindowLimiter(60_000, () => now);
  const registry = new HealthRegistry(new EventBus());
  const refusals: number[] = [];
  const request = (groups: CandidateGroup[], counted: string | null = null) => {
    const headers: Record<string, string> = {};
    const gate = new ModelLimitGate(limiter, KEY, new Map(Object.entries(limits)), headers, (limit) => refusals.push(limit), counted);
    const plan = new AttemptPlan(groups, { ...DEFAULT_ROUTING_POLICY, adaptive: false }, registry, now, () => 0.5, gate);
    return { plan, gate, headers };
  };
  return { limiter, request, refusals, advance: (ms: number) => (now += ms), now: () => now };
}

function drain(plan: AttemptPlan, now: number): Attempt[] {
  const out: Attempt[] = [];
  for (let attempt = plan.next(now); attempt; attempt = plan.next(now)) out.push(attempt);
  return out;
}

describe('ModelLimitGate with an AttemptPlan', () => {
  it('counts a model once per request however often it is retried, and passes it over once its window is full', () => {
    const t = setup({ 'a/m': 1 });
    const [a, b] = [candidate('a'), candidate('b')];
    const first = t.request([{ name: 'route', candidates: [a] }, { name: 'b/m', candidates: [b] }]);
    // Every attempt fails: a, then b, then retries; a is counted once.
    const attempts = drain(first.plan, t.now());
    expect(attempts.map((attempt) => attempt.candidate.label)).toEqual(['a/m', 'b/m', 'a/m']);
    expect(t.limiter.state('rpm:key:k1:a/m', 1).remaining).toBe(0);
    expect(first.headers['x-ratelimit-remaining-requests']).toBe('0');
    expect(first.gate.refusal()).toBeNull();

    // The next request skips a without spending an attempt on it.
    const second = t.request([{ name: 'route', candidates: [a] }, { name: 'b/m', candidates: [b] }]);
    const next = second.plan.next(t.now());
    expect(next?.candidate.label).toBe('b/m');
    expect(second.plan.attempts).toBe(1);
  });

  it('counts a model served by two provider keys once', () => {
    const t = setup({ 'a/m': 2 });
    const plan = t.request([{ name: 'route', candidates: [candidate('a', 'k1'), candidate('a', 'k2')] }]).plan;
    expect(plan.next(t.now())).not.toBeNull();
    expect(plan.next(t.now())).not.toBeNull();
    expect(t.limiter.state('rpm:key:k1:a/m', 2).remaining).toBe(1);
  });

  it('does not count again the model the rate-limit stage counted at admission', () => {
    const t = setup({ 'a/m': 1 });
    t.limiter.tryTake('rpm:key:k1:a/m', 1);
    const { plan } = t.request([{ name: 'a/m', candidates: [candidate('a')] }], 'a/m');
    expect(plan.next(t.now())?.candidate.label).toBe('a/m');
    expect(t.limiter.state('rpm:key:k1:a/m', 1).remaining).toBe(0);
  });

  it('with nothing callable, refuses with a 429 for the window that makes room soonest', () => {
    const t = setup({ 'a/m': 1, 'b/m': 1 });
    t.limiter.tryTake('rpm:key:k1:a/m', 1);
    t.advance(20_000);
    t.limiter.tryTake('rpm:key:k1:b/m', 1);
    const { plan, gate } = t.request([{ name: 'route', candidates: [candidate('a'), candidate('b')] }]);
    expect(plan.next(t.now())).toBeNull();
    expect(plan.attempts).toBe(0);
    const error = gate.refusal();
    expect(error).toMatchObject({ status: 429, code: 'rate_limit_exceeded' });
    expect(error?.message).toContain("key 'limited' on model 'a/m'");
    expect(error?.headers).toMatchObject({ 'retry-after': '40', 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0' });
    expect(t.refusals).toEqual([1]);
    // Once a's window has room again, it is called.
    t.advance(40_000);
    expect(t.request([{ name: 'route', candidates: [candidate('a')] }]).plan.next(t.now())?.candidate.label).toBe('a/m');
  });
});
