import type { BreakerPolicy } from '../core/config.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

/** What a call's admission says: go ahead, go ahead as one of the half-open trials, or skip the target. */
export type Admission = 'closed' | 'trial' | null;

/** A state change worth an event. */
export type BreakerTransition = 'opened' | 'closed' | null;

/**
 * The failure-rate window is kept as this many buckets of windowMs/BUCKETS each: constant memory and constant
 * work per call at any traffic, at the price of a window that ends on a bucket edge (up to 1/20 longer).
 */
const BUCKETS = 20;

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
  /** The cool-down of the policy (the route's) the breaker last opened under. */
  private openedCooldownMs = 0;
  private consecutive = 0;
  private trials = 0;
  /**
   * One failure-rate window per window length the target is called under (a route's, the default for direct
   * requests), each fed every call: one shared set of buckets, re-cut whenever a call came under another length,
   * lost its counts to the target's other traffic, and a failure-rate breaker never opened.
   */
  private readonly windows = new Map<number, RateWindow>();
  /** The window last recorded into, read for a policy that has none of its own yet. */
  private lastWindow: RateWindow | null = null;
  /** Why the breaker last opened, for the health view. */
  reason: string | null = null;

  state(now: number, policy: BreakerPolicy): BreakerState {
    if (this.current === 'open' && now - this.openedAt >= policy.cooldownMs) return 'half-open';
    return this.current;
  }

  /**
   * The state for a view that has no route's policy at hand (the metrics): an open breaker turns half-open after
   * the cool-down of the policy it opened under, the route's own, not the global default.
   */
  stateNow(now: number): BreakerState {
    if (this.current === 'open' && now - this.openedAt >= this.openedCooldownMs) return 'half-open';
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

  /**
   * A trial call began answering (a stream's first event): a half-open breaker closes now, as a trial success
   * closes it, without counting the call yet (it is counted when it ends, as a call admitted while closed). True
   * when it closed.
   */
  trialAnswered(): boolean {
    if (this.current !== 'half-open') return false;
    this.close();
    return true;
  }

  success(now: number, policy: BreakerPolicy, admission: Admission): BreakerTransition {
    this.consecutive = 0;
    this.push(now, true, policy);
    // With the breaker turned off (live, say during an incident) a success is no trial but proof all the same: an
    // open breaker left as it was stayed reported open (metrics, health view) and its alert never resolved.
    const healed = (admission === 'trial' && this.current === 'half-open') || (!policy.enabled && this.current !== 'closed');
    if (healed) {
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
      this.open(now, policy, 'a trial call failed');
      return 'opened';
    }
    if (this.current === 'open') return null;
    if (this.consecutive >= policy.consecutiveFailures) {
      this.open(now, policy, `${this.consecutive} consecutive failures`);
      return 'opened';
    }
    const rate = this.failureRate(now, policy);
    if (rate.calls >= policy.minRequests && rate.rate >= policy.failureRate) {
      this.open(now, policy, `${Math.round(rate.rate * 100)}% of ${rate.calls} calls failed in ${policy.windowMs} ms`);
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

  /**
   * The failure rate over the policy's window. A read: it never re-buckets; a health view read under another
   * policy's window (the target's own name, another route sharing it) used to wipe the counts the breaker opens on.
   * A length no call was recorded under yet is read from the window last recorded into.
   */
  failureRate(now: number, policy: BreakerPolicy): { calls: number; rate: number } {
    const window = this.windows.get(bucketWidthOf(policy)) ?? this.lastWindow;
    return window ? window.rate(now, policy.windowMs) : { calls: 0, rate: 0 };
  }

  private open(now: number, policy: BreakerPolicy, reason: string): void {
    this.current = 'open';
    this.openedAt = now;
    this.openedCooldownMs = policy.cooldownMs;
    this.trials = 0;
    this.reason = reason;
  }

  private close(): void {
    this.current = 'closed';
    this.consecutive = 0;
    this.trials = 0;
    // A healed target starts with a clean window, or old failures would trip it again at once.
    for (const window of this.windows.values()) window.clear();
    this.reason = null;
  }

  private push(now: number, ok: boolean, policy: BreakerPolicy): void {
    const width = bucketWidthOf(policy);
    let own = this.windows.get(width);
    if (!own) {
      // A few lengths at most in practice; past the cap the oldest goes (a policy changed live many times).
      if (this.windows.size >= MAX_WINDOWS) this.windows.delete(this.windows.keys().next().value as number);
      own = new RateWindow(width);
      // The calls so far count in the new length too, as near as the old buckets tell when they came.
      if (this.lastWindow) own.seedFrom(this.lastWindow);
      this.windows.set(width, own);
    }
    for (const window of this.windows.values()) window.push(now, ok);
    this.lastWindow = own;
  }
}

/** Window lengths a breaker keeps counts for at once. */
const MAX_WINDOWS = 4;

/** Calls and failures over a sliding window, as BUCKETS buckets of one width. */
class RateWindow {
  private readonly bucketStart = new Float64Array(BUCKETS).fill(-Infinity);
  private readonly bucketOk = new Uint32Array(BUCKETS);
  private readonly bucketFailed = new Uint32Array(BUCKETS);

  constructor(private readonly width: number) {}

  push(now: number, ok: boolean): void {
    this.add(now, ok ? 1 : 0, ok ? 0 : 1);
  }

  /** Takes another window's counts, each bucket's at the time its bucket started. */
  seedFrom(other: RateWindow): void {
    const order = [...other.bucketStart.keys()].filter((i) => (other.bucketStart[i] as number) > -Infinity);
    order.sort((a, b) => (other.bucketStart[a] as number) - (other.bucketStart[b] as number));
    for (const i of order) this.add(other.bucketStart[i] as number, other.bucketOk[i] as number, other.bucketFailed[i] as number);
  }

  private add(now: number, ok: number, failed: number): void {
    const index = Math.floor(now / this.width);
    const slot = index % BUCKETS;
    const start = index * this.width;
    if (this.bucketStart[slot] !== start) {
      // An older bucket never overwrites a newer one in the same slot.
      if ((this.bucketStart[slot] as number) > start) return;
      this.bucketStart[slot] = start;
      this.bucketOk[slot] = 0;
      this.bucketFailed[slot] = 0;
    }
    this.bucketOk[slot] = (this.bucketOk[slot] as number) + ok;
    this.bucketFailed[slot] = (this.bucketFailed[slot] as number) + failed;
  }

  /** A read: the buckets any part of which lies within the last `windowMs`. */
  rate(now: number, windowMs: number): { calls: number; rate: number } {
    const oldest = now - windowMs - this.width;
    let calls = 0;
    let failed = 0;
    for (let i = 0; i < BUCKETS; i++) {
      const start = this.bucketStart[i] as number;
      if (start <= oldest || start > now) continue;
      calls += (this.bucketOk[i] as number) + (this.bucketFailed[i] as number);
      failed += this.bucketFailed[i] as number;
    }
    return { calls, rate: calls === 0 ? 0 : failed / calls };
  }

  clear(): void {
    this.bucketStart.fill(-Infinity);
  }
}

function bucketWidthOf(policy: BreakerPolicy): number {
  return Math.max(1, Math.ceil(policy.windowMs / BUCKETS));
}
