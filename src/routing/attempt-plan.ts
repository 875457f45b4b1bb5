import type { RoutingPolicy } from '../core/config.js';
import type { GatewayError } from '../core/errors.js';
import { contextKey } from '../core/extensions.js';
import { backoffDelay } from './backoff.js';
import type { CandidateGroup } from '../core/plan.js';
import type { Admission } from './circuit-breaker.js';
import type { HealthRegistry } from './health-registry.js';
import type { Candidate } from '../core/plan.js';
import type { TargetHealth } from './target-health.js';

export interface Attempt {
  candidate: Candidate;
  health: TargetHealth;
  admission: Admission;
  /** Index of the candidate's group: 0 is the route itself, later ones are fallbacks. */
  group: number;
  /** How long to wait before calling (backoff and retry-after); 0 for a first call of a target. */
  delayMs: number;
}

/**
 * A say over which candidates one request may call, beside breakers and 429 pauses: a virtual key's per-model rate
 * limits (governance/model-limits.ts). `allows` only looks; `attempted` is told of each attempt the plan hands out
 * (within the same synchronous step, so what `allows` saw still holds). A candidate the gate refuses is passed
 * over as an open breaker is, without spending one of the request's attempts.
 */
export interface AttemptGate {
  /** Whether an attempt on the candidate may be made now (no side effect). */
  allows(candidate: Candidate): boolean;
  /** The plan hands out an attempt on the candidate. */
  attempted(candidate: Candidate): void;
  /** The error for a request that ends without any attempt because the gate refused some candidate; else null. */
  refusal(): GatewayError | null;
}

/** Where a stage before the call stage (rate-limit) leaves the request's gate, if it has one. */
export const ATTEMPT_GATE = contextKey<AttemptGate>('tollgate.attempt-gate');

/** Which targets paused by a 429 a pick may take: none, those whose pause ends before the deadline, or any. */
type PausedPolicy = 'unpaused' | 'within-deadline' | 'any';

/** Why the plan has nothing more to try. */
export type Exhausted = 'attempts' | 'deadline' | 'all-open' | 'no-candidate';

/**
 * Chooses each attempt of one request. First pass: every candidate once at most, route before fallbacks,
 * weighted (adaptively, when the policy says so) among the group's untried candidates; open breakers and
 * targets paused by a 429 are skipped. When the first pass is used up, later passes retry targets with
 * exponential backoff and full jitter, waiting at least as long as a target's retry-after. Bounded by the
 * policy's max attempts and its deadline. An optional gate (see AttemptGate) rules candidates out as breakers do.
 */
export class AttemptPlan {
  readonly maxAttempts: number;
  attempts = 0;
  exhausted: Exhausted | null = null;
  private pass = 0;
  private retries = 0;
  /**
   * Targets (candidate ids) called in this pass. By id, not by candidate: a fallback naming one of the route's own
   * targets (or a route sharing one) is the same target, and was called again at once in its turn as a fallback,
   * without a backoff, while the next fallback never got the request.
   */
  private readonly tried = new Set<string>();
  /** Targets (candidate ids) this request must not call again (see exclude). */
  private readonly excluded = new Set<string>();
  private readonly deadlineAt: number;
  /** Some target was ruled out because its 429 pause outlasts the deadline. */
  private pausedPastDeadline = false;

  constructor(
    readonly groups: readonly CandidateGroup[],
    readonly policy: RoutingPolicy,
    private readonly registry: HealthRegistry,
    startedAt: number,
    private readonly random: () => number = Math.random,
    private readonly gate: AttemptGate | null = null,
  ) {
    const total = groups.reduce((sum, group) => sum + group.candidates.length, 0);
    this.maxAttempts = policy.retry.maxAttempts ?? Math.max(3, total);
    this.deadlineAt = startedAt + policy.retry.deadlineMs;
  }

  /** The next attempt, or null (see `exhausted`). Takes a half-open trial slot when it picks such a target. */
  next(now: number = Date.now()): Attempt | null {
    if (this.attempts >= this.maxAttempts) return this.stop('attempts');
    if (now >= this.deadlineAt) return this.stop('deadline');
    for (let round = 0; round < 2; round++) {
      let attempt = this.pick(now, this.pass > 0 ? 'within-deadline' : 'unpaused');
      // Every candidate paused by a 429 before any call: the least bad is still worth one call now, the
      // upstream decides; only retries wait for retry-after.
      if (!attempt && this.pass === 0 && this.tried.size === 0) attempt = this.pick(now, 'any');
      if (attempt) {
        if (now + attempt.delayMs >= this.deadlineAt) {
          attempt.health.breaker.release(attempt.admission);
          return this.stop('deadline');
        }
        this.attempts++;
        if (this.gate) this.gate.attempted(attempt.candidate);
        return attempt;
      }
      // Nothing left in this pass: start a retry pass, unless nothing was ever callable.
      if (this.tried.size === 0) return this.stop(this.emptyReason(now));
      this.pass++;
      this.tried.clear();
    }
    return this.stop(this.emptyReason(now));
  }

  /**
   * The candidate's adapter refused the request before calling it (see the call stage's refusals): it is ruled out, and
   * the attempt it was handed is given back, as a candidate passed over for an open breaker spends none.
   */
  refused(candidate: Candidate): void {
    this.exclude(candidate);
    this.attempts = Math.max(0, this.attempts - 1);
  }

  /** Rules a candidate out for the rest of the request (its provider refused its key: no retry of it can succeed). */
  exclude(candidate: Candidate): void {
    this.excluded.add(candidate.id);
  }

  /**
   * Why a group none of whose candidates was called could not take the request's first attempt (the plan went
   * straight past it to a later group): its first candidate's reason, as the `fallback.used` event's `reason`.
   */
  passedOver(group: number, now: number = Date.now()): string {
    const candidate = this.groups[group]?.candidates[0];
    if (!candidate) return 'unavailable';
    if (this.excluded.has(candidate.id)) return 'key_refused';
    const health = this.registry.get(candidate);
    if (!health.breaker.available(now, this.policy.breaker)) return 'circuit_open';
    if (this.gate && !this.gate.allows(candidate)) return 'model_rate_limited';
    if (health.pausedUntil(now) !== null) return 'rate_limited';
    return 'unavailable';
  }

  private emptyReason(now: number): Exhausted {
    if (this.pausedPastDeadline) return 'deadline';
    return this.anyAvailable(now) ? 'no-candidate' : 'all-open';
  }

  private pick(now: number, paused: PausedPolicy): Attempt | null {
    const retrying = this.pass > 0;
    for (let group = 0; group < this.groups.length; group++) {
      const pool = this.eligible(group, now, paused);
      while (pool.length > 0) {
        const chosen = this.choose((this.groups[group] as CandidateGroup).name, pool, now);
        pool.splice(pool.indexOf(chosen), 1);
        this.tried.add(chosen.candidate.id);
        const admission = chosen.health.breaker.admit(now, this.policy.breaker);
        if (admission === null) continue;
        let delayMs = 0;
        if (retrying) {
          delayMs = backoffDelay(this.retries++, this.policy.retry, this.random);
          const pausedUntil = chosen.health.pausedUntil(now);
          if (pausedUntil !== null) delayMs = Math.max(delayMs, pausedUntil - now);
        }
        return { candidate: chosen.candidate, health: chosen.health, admission, group, delayMs };
      }
    }
    return null;
  }

  /** Untried candidates of a group whose breaker lets a call through, and whose 429 pause the policy accepts. */
  private eligible(group: number, now: number, paused: PausedPolicy): Array<{ candidate: Candidate; health: TargetHealth; weight: number }> {
    const out = [];
    for (const candidate of (this.groups[group] as CandidateGroup).candidates) {
      if (this.tried.has(candidate.id) || this.excluded.has(candidate.id)) continue;
      const health = this.registry.get(candidate);
      if (!health.breaker.available(now, this.policy.breaker)) continue;
      if (this.gate && !this.gate.allows(candidate)) continue;
      const pausedUntil = health.pausedUntil(now);
      if (pausedUntil !== null && paused !== 'any') {
        if (paused === 'unpaused') continue;
        // A pause that outlasts the deadline rules the target out, so the search goes on to the others.
        if (pausedUntil >= this.deadlineAt) {
          this.pausedPastDeadline = true;
          continue;
        }
      }
      out.push({ candidate, health, weight: candidate.weight });
    }
    return out;
  }

  /** Smooth weighted round-robin over the group's eligible candidates, weights scaled adaptively. */
  private choose<T extends { candidate: Candidate; health: TargetHealth; weight: number }>(groupName: string, pool: T[], now: number): T {
    if (pool.length === 1) return pool[0] as T;
    if (!this.policy.adaptive) return this.registry.balancer(groupName).pick(pool, (entry) => entry.weight, (entry) => entry.health.id) as T;
    const fastest = fastestLatency(pool.map((entry) => entry.health));
    const weightOf = (entry: T): number => entry.weight * entry.health.factor(now, fastest);
    return this.registry.balancer(groupName).pick(pool, weightOf, (entry) => entry.health.id) as T;
  }

  private anyAvailable(now: number): boolean {
    return this.groups.some((group) => group.candidates.some((c) => this.registry.get(c).breaker.available(now, this.policy.breaker)));
  }

  private stop(reason: Exhausted): null {
    this.exhausted = reason;
    return null;
  }
}

/**
 * Whether some candidate of the plan could take a call now without waiting out a pause: then next() passes over
 * every paused target, whichever group it is in (a paused primary's traffic goes to an unpaused fallback).
 */
export function someUnpaused(groups: readonly CandidateGroup[], policy: RoutingPolicy, registry: HealthRegistry, now: number = Date.now()): boolean {
  return groups.some((group) =>
    group.candidates.some((candidate) => {
      const health = registry.get(candidate);
      return health.breaker.available(now, policy.breaker) && health.pausedUntil(now) === null;
    }),
  );
}

/**
 * Effective weights of a group's candidates as adaptive balancing sees them now (the configured weight when
 * adaptive balancing is off), for the health API. `unpausedElsewhere`: some candidate of another group of the plan
 * can take a call unpaused (see someUnpaused), so this group's paused targets get nothing.
 */
export function effectiveWeights(group: CandidateGroup, policy: RoutingPolicy, registry: HealthRegistry, now: number = Date.now(), unpausedElsewhere = false): number[] {
  const healths = group.candidates.map((candidate) => registry.get(candidate));
  // As in choose(): only targets that can take a call set the pace.
  const fastest = fastestLatency(healths.filter((health) => health.breaker.available(now, policy.breaker)));
  // As in next(): a target paused by a 429 (or a 503's retry-after) is passed over while a peer, in this group or
  // another, is not paused; only when every target is paused does the balancer choose among them.
  const peerUnpaused = unpausedElsewhere || healths.some((health) => health.breaker.available(now, policy.breaker) && health.pausedUntil(now) === null);
  return group.candidates.map((candidate, i) => {
    const health = healths[i] as TargetHealth;
    if (!health.breaker.available(now, policy.breaker)) return 0;
    if (peerUnpaused && health.pausedUntil(now) !== null) return 0;
    return policy.adaptive ? candidate.weight * health.factor(now, fastest) : candidate.weight;
  });
}

/** The lowest latency average among targets, the yardstick adaptive balancing measures each target by. */
function fastestLatency(healths: readonly TargetHealth[]): number | null {
  let fastest: number | null = null;
  for (const health of healths) {
    const latency = health.latencyMs();
    if (latency !== null && (fastest === null || latency < fastest)) fastest = latency;
  }
  return fastest;
}
