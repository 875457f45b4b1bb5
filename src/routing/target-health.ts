import type { BreakerPolicy } from '../core/config.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { RateMeter } from './rate-meter.js';

/** How fast observations fade back toward "healthy" when a target gets no traffic to prove it. */
const RECOVERY_HALF_LIFE_MS = 20_000;
/** Weight of a new observation in the moving averages. */
const EWMA_ALPHA = 0.3;
/** Latencies closer than this are treated as equal, so sub-millisecond noise does not move traffic. */
const LATENCY_SLACK_MS = 25;
/** Peers slower by less than this ratio are not penalised at all. */
const LATENCY_DEAD_BAND = 0.8;
/** The least share an unhealthy-but-admitted target keeps, so it keeps being probed and can prove recovery. */
const MIN_FACTOR = 0.03;
/** Waiting asked by a 429 without retry-after. */
const DEFAULT_RATE_LIMIT_PAUSE_MS = 1_000;

type Headers = Record<string, string | string[] | undefined>;

function headerNumber(headers: Headers, name: string): number | null {
  const raw = headers[name];
  const value = Number(Array.isArray(raw) ? raw[0] : raw);
  return raw === undefined || !Number.isFinite(value) ? null : value;
}

/** Share of the request budget left, from the rate-limit headers providers send (OpenAI, Anthropic styles). */
function remainingShare(headers: Headers): number | null {
  const pairs: Array<[string, string]> = [
    ['x-ratelimit-remaining-requests', 'x-ratelimit-limit-requests'],
    ['anthropic-ratelimit-requests-remaining', 'anthropic-ratelimit-requests-limit'],
  ];
  for (const [remainingName, limitName] of pairs) {
    const remaining = headerNumber(headers, remainingName);
    const limit = headerNumber(headers, limitName);
    if (remaining !== null && limit !== null && limit > 0) return Math.max(0, Math.min(1, remaining / limit));
  }
  return null;
}

/** Moves `value` toward `target` by how much time passed, with the recovery half-life. */
function fade(value: number, target: number, elapsedMs: number): number {
  if (elapsedMs <= 0) return value;
  const keep = 0.5 ** (elapsedMs / RECOVERY_HALF_LIFE_MS);
  return target + (value - target) * keep;
}

export interface HealthSnapshot {
  successRate: number;
  latencyMs: number | null;
  recentRateLimits: number;
  rateLimitedUntil: number | null;
  rateLimitRemaining: number | null;
  calls: number;
  failures: number;
  inFlight: number;
  rps: number;
  lastError: string | null;
}

/**
 * What tollgate knows about one target (provider, model, key): its breaker, and the observations adaptive
 * balancing turns into a weight factor: success rate and latency (moving averages), capacity (recent 429s,
 * retry-after, remaining rate-limit budget). Observations fade back toward healthy with time, so a target
 * that healed regains its weight even before much traffic reaches it.
 */
export class TargetHealth {
  readonly breaker = new CircuitBreaker();
  readonly rate = new RateMeter();
  private successEwma = 1;
  private latencyEwma: number | null = null;
  private latencyAt = 0;
  private rateLimits = 0;
  private rateLimitedUntil = 0;
  private remaining: number | null = null;
  private updatedAt = 0;
  private calls = 0;
  private failures = 0;
  private inFlight = 0;
  private lastError: string | null = null;
  lastUsedAt = 0;

  constructor(
    readonly id: string,
    readonly label: string,
  ) {}

  started(now: number): void {
    this.calls++;
    this.inFlight++;
    this.lastUsedAt = now;
    this.rate.mark(now);
  }

  /** The upstream answered well; `latencyMs` is its time to first byte (answer length does not skew it). */
  succeeded(now: number, latencyMs: number | null, headers: Headers): void {
    this.settle(now);
    this.successEwma += EWMA_ALPHA * (1 - this.successEwma);
    if (latencyMs !== null) {
      this.latencyEwma = this.latencyEwma === null ? latencyMs : this.latencyEwma + EWMA_ALPHA * (latencyMs - this.latencyEwma);
      this.latencyAt = now;
    }
    this.remaining = remainingShare(headers);
  }

  /**
   * The target failed (server error, timeout, broken connection). A failure that asked for a wait (a 503 with
   * retry-after) also pauses the target for it, as a 429 does: retries wait it out and other requests go elsewhere.
   */
  failed(now: number, reason: string, latencyMs: number | null, retryAfterMs: number | null = null): void {
    this.settle(now);
    if (retryAfterMs !== null) this.rateLimitedUntil = Math.max(this.rateLimitedUntil, now + retryAfterMs);
    this.failures++;
    this.lastError = reason;
    this.successEwma += EWMA_ALPHA * (0 - this.successEwma);
    // A call that timed out was at least this slow; counting it keeps a stalling target from looking fast.
    if (latencyMs !== null && this.latencyEwma !== null && latencyMs > this.latencyEwma) {
      this.latencyEwma += EWMA_ALPHA * (latencyMs - this.latencyEwma);
      this.latencyAt = now;
    }
  }

  /** The target is out of capacity (429): it pauses for the asked time and loses weight for a while. */
  rateLimited(now: number, retryAfterMs: number | null, headers: Headers): void {
    this.settle(now);
    this.failures++;
    this.lastError = 'rate limited (429)';
    this.rateLimits += 1;
    this.rateLimitedUntil = Math.max(this.rateLimitedUntil, now + (retryAfterMs ?? DEFAULT_RATE_LIMIT_PAUSE_MS));
    this.remaining = remainingShare(headers) ?? 0;
  }

  /** The call ended without telling anything about the target (client gone, client error). */
  ended(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  /** Whether the upstream asked us to wait (429 retry-after) and the time is not up. */
  pausedUntil(now: number): number | null {
    return this.rateLimitedUntil > now ? this.rateLimitedUntil : null;
  }

  /**
   * The multiplier adaptive balancing applies to the configured weight: success^2 x latency relative to the
   * fastest peer x capacity. Never below a small floor, so the target keeps being probed.
   */
  factor(now: number, fastestPeerLatencyMs: number | null): number {
    const elapsed = now - this.updatedAt;
    const success = fade(this.successEwma, 1, elapsed);
    let factor = success * success;
    const latency = this.latencyEwma;
    if (latency !== null && fastestPeerLatencyMs !== null) {
      // Within a quarter of the fastest peer counts as equally fast: jitter must not skew configured weights.
      const relative = Math.min(1, (fastestPeerLatencyMs + LATENCY_SLACK_MS) / (latency + LATENCY_SLACK_MS) / LATENCY_DEAD_BAND);
      factor *= fade(relative, 1, now - this.latencyAt);
    }
    factor /= 1 + fade(this.rateLimits, 0, elapsed);
    if (this.rateLimitedUntil > now) factor *= 0.05;
    if (this.remaining !== null && this.remaining < 0.1) factor *= fade(Math.max(0.1, this.remaining * 10), 1, elapsed);
    return Math.max(MIN_FACTOR, Math.min(1, factor));
  }

  latencyMs(): number | null {
    return this.latencyEwma;
  }

  snapshot(now: number): HealthSnapshot {
    const elapsed = now - this.updatedAt;
    return {
      successRate: fade(this.successEwma, 1, elapsed),
      latencyMs: this.latencyEwma,
      recentRateLimits: fade(this.rateLimits, 0, elapsed),
      rateLimitedUntil: this.pausedUntil(now),
      rateLimitRemaining: this.remaining,
      calls: this.calls,
      failures: this.failures,
      inFlight: this.inFlight,
      rps: this.rate.perSecond(now),
      lastError: this.lastError,
    };
  }

  breakerPolicyState(now: number, policy: BreakerPolicy): { state: string; consecutiveFailures: number; failureRate: number; windowCalls: number; halfOpensAt: number | null; reason: string | null } {
    const rate = this.breaker.failureRate(now, policy);
    return {
      state: this.breaker.state(now, policy),
      consecutiveFailures: this.breaker.consecutiveFailures(),
      failureRate: rate.rate,
      windowCalls: rate.calls,
      halfOpensAt: this.breaker.halfOpensAt(policy),
      reason: this.breaker.reason,
    };
  }

  /** Folds elapsed time into the averages before a new observation, so fading and updates compose. */
  private settle(now: number): void {
    const elapsed = now - this.updatedAt;
    this.successEwma = fade(this.successEwma, 1, elapsed);
    this.rateLimits = fade(this.rateLimits, 0, elapsed);
    this.updatedAt = now;
    this.inFlight = Math.max(0, this.inFlight - 1);
  }
}
