import type { BreakerPolicy } from '../config/routing-policy.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

/** What a call's admission says: go ahead, go ahead as one of the half-open trials, or skip the target. */
export type Admission = 'closed' | 'trial' | null;

/** A state change worth an event. */
export type BreakerTransition = 'opened' | 'closed' | null;

interface Outcome {
  at: number;
  ok: boolean;
}

/** Outcomes kept for the failure rate; enough for any sane window at high traffic without unbounded memory. */
const MAX_OUTCOMES = 2_000;

/**
 * A per-target circuit breaker. Closed: calls pass and failures are counted. It opens on N consecutive
 * failures or when the failure rate in a sliding window passes the threshold (once the window has enough
 * calls). Open: calls are skipped without an upstream request until the cool-down ends. Half-open: a limited
 * number of trial calls pass; a trial success closes it, a trial failure opens it again for another cool-down.
 * The policy is passed per call because one target may serve routes with different settings.
 */
export class CircuitBreaker {
  private current: BreakerState = 'closed';
  private openedAt = 0;
  private consecutive = 0;
  private trials = 0;
  private outcomes: Outcome[] = [];
  /** Why the breaker last opened, for the health view. */
  reason: string | null = null;

  state(now: number, policy: BreakerPolicy): BreakerState {
    if (this.current === 'open' && now - this.openedAt >= policy.cooldownMs) return 'half-open';
    return this.current;
  }

  /** Whether a call could go now, without taking a trial slot (for choosing among targets). */
  available(now: number, policy: BreakerPolicy): boolean {
    if (!policy.enabled) return true;
    const state = this.state(now, policy);
    if (state === 'closed') return true;
    if (state === 'open') return false;
    return this.current === 'open' || this.trials < policy.halfOpenRequests;
  }

  /** Takes the right to call: a trial slot when half-open. Null when the target must be skipped. */
  admit(now: number, policy: BreakerPolicy): Admission {
    if (!policy.enabled) return 'closed';
    const state = this.state(now, policy);
    if (state === 'closed') return 'closed';
    if (state === 'open') return null;
    if (this.current === 'open') {
      this.current = 'half-open';
      this.trials = 0;
    }
    if (this.trials >= policy.halfOpenRequests) return null;
    this.trials++;
    return 'trial';
  }

  /** A call that was admitted ended without saying anything about the target (client gone, rate limited). */
  release(admission: Admission): void {
    if (admission === 'trial' && this.current === 'half-open') this.trials = Math.max(0, this.trials - 1);
  }

  success(now: number, policy: BreakerPolicy, admission: Admission): BreakerTransition {
    this.consecutive = 0;
    this.push(now, true, policy);
    if (admission === 'trial' && this.current === 'half-open') {
      this.close();
      return 'closed';
    }
    return null;
  }

  failure(now: number, policy: BreakerPolicy, admission: Admission): BreakerTransition {
    this.consecutive++;
    this.push(now, false, policy);
    if (!policy.enabled) return null;
    if (this.current === 'half-open') {
      if (admission !== 'trial') return null;
      this.open(now, 'a trial call failed');
      return 'opened';
    }
    if (this.current === 'open') return null;
    if (this.consecutive >= policy.consecutiveFailures) {
      this.open(now, `${this.consecutive} consecutive failures`);
      return 'opened';
    }
    const rate = this.failureRate(now, policy);
    if (rate.calls >= policy.minRequests && rate.rate >= policy.failureRate) {
      this.open(now, `${Math.round(rate.rate * 100)}% of ${rate.calls} calls failed in ${policy.windowMs} ms`);
      return 'opened';
    }
    return null;
  }

  consecutiveFailures(): number {
    return this.consecutive;
  }

  /** When an open breaker lets its first trial through; null unless open. */
  halfOpensAt(policy: BreakerPolicy): number | null {
    return this.current === 'open' ? this.openedAt + policy.cooldownMs : null;
  }

  failureRate(now: number, policy: BreakerPolicy): { calls: number; rate: number } {
    this.prune(now, policy);
    let failed = 0;
    for (const outcome of this.outcomes) if (!outcome.ok) failed++;
    const calls = this.outcomes.length;
    return { calls, rate: calls === 0 ? 0 : failed / calls };
  }

  private open(now: number, reason: string): void {
    this.current = 'open';
    this.openedAt = now;
    this.trials = 0;
    this.reason = reason;
  }

  private close(): void {
    this.current = 'closed';
    this.consecutive = 0;
    this.trials = 0;
    // A healed target starts with a clean window, or old failures would trip it again at once.
    this.outcomes = [];
    this.reason = null;
  }

  private push(now: number, ok: boolean, policy: BreakerPolicy): void {
    this.outcomes.push({ at: now, ok });
    if (this.outcomes.length > MAX_OUTCOMES) this.outcomes.splice(0, this.outcomes.length - MAX_OUTCOMES);
    this.prune(now, policy);
  }

  private prune(now: number, policy: BreakerPolicy): void {
    const from = now - policy.windowMs;
    let drop = 0;
    while (drop < this.outcomes.length && (this.outcomes[drop] as Outcome).at < from) drop++;
    if (drop > 0) this.outcomes.splice(0, drop);
  }
}
