import type { EventBus } from '../bus/bus.js';
import type { BreakerPolicy } from '../core/config.js';
import type { Target } from '../core/provider.js';
import { targetId } from './resolve-target.js';
import { type Candidate } from '../core/plan.js';
import type { Admission } from './circuit-breaker.js';
import { RateMeter } from './rate-meter.js';
import { SmoothWeighted } from './smooth-weighted.js';
import { TargetHealth } from './target-health.js';

/** Health is kept for this many targets at most; idle ones go first (model names can be anything clients send). */
const MAX_TARGETS = 10_000;


/** How an attempt ended, as far as the target's health is concerned. */
export type AttemptOutcome =
  | { kind: 'success'; latencyMs: number | null; headers: Record<string, string | string[] | undefined> }
  /** `retryAfterMs`: the wait the upstream's error asked for (a 503's retry-after), a pause like a 429's. */
  | { kind: 'failure'; reason: string; latencyMs: number | null; retryAfterMs?: number | null }
  | { kind: 'rate-limited'; retryAfterMs: number | null; headers: Record<string, string | string[] | undefined> }
  /** Says nothing about the target: the client left, or the request itself was bad. */
  | { kind: 'neutral' };

/**
 * Health and breakers of every target, kept across config versions (a config change does not forget that a
 * provider is down). Emits `breaker.opened` / `breaker.closed`.
 */
export class HealthRegistry {
  private readonly targets = new Map<string, TargetHealth>();
  private readonly labelRates = new Map<string, RateMeter>();
  private readonly balancers = new Map<string, SmoothWeighted>();

  constructor(private readonly bus: EventBus) {}

  /** The health of a target; pass the candidate (its id is precomputed) on the request path. */
  get(subject: Target | Candidate): TargetHealth {
    const candidate = 'id' in subject ? subject : null;
    const target = candidate ? candidate.target : (subject as Target);
    const id = candidate ? candidate.id : targetId(target);
    let health = this.targets.get(id);
    if (!health) {
      if (this.targets.size >= MAX_TARGETS) this.evictIdle();
      health = new TargetHealth(id, `${target.provider.name}/${target.model}`);
      this.targets.set(id, health);
    }
    return health;
  }

  /** Every target seen lately (for metrics: breaker state and health per target). */
  all(): IterableIterator<TargetHealth> {
    return this.targets.values();
  }

  peek(target: Target): TargetHealth | undefined {
    return this.targets.get(targetId(target));
  }

  /** The round-robin state of one candidate group (a route or a model), shared by all its requests. */
  balancer(group: string): SmoothWeighted {
    let balancer = this.balancers.get(group);
    if (!balancer) {
      if (this.balancers.size >= MAX_TARGETS) this.balancers.clear();
      balancer = new SmoothWeighted();
      this.balancers.set(group, balancer);
    }
    return balancer;
  }

  /** Requests per second a `<provider>/<model>` served lately, all keys together (10 s average). */
  rps(label: string, now: number = Date.now()): number {
    return this.labelRates.get(label)?.perSecond(now) ?? 0;
  }

  started(health: TargetHealth, now: number): void {
    health.started(now);
    let meter = this.labelRates.get(health.label);
    if (!meter) {
      if (this.labelRates.size >= MAX_TARGETS) this.labelRates.clear();
      meter = new RateMeter();
      this.labelRates.set(health.label, meter);
    }
    meter.mark(now);
  }

  /** Records an attempt's end on the target's health and breaker, and reports breaker transitions. */
  finished(health: TargetHealth, admission: Admission, policy: BreakerPolicy, outcome: AttemptOutcome, now: number = Date.now()): void {
    let transition = null;
    switch (outcome.kind) {
      case 'success':
        health.succeeded(now, outcome.latencyMs, outcome.headers);
        transition = health.breaker.success(now, policy, admission);
        break;
      case 'failure':
        health.failed(now, outcome.reason, outcome.latencyMs, outcome.retryAfterMs ?? null);
        transition = health.breaker.failure(now, policy, admission);
        break;
      case 'rate-limited':
        // Out of capacity is not broken: the pause and the weight carry it, the breaker does not count it.
        health.rateLimited(now, outcome.retryAfterMs, outcome.headers);
        health.breaker.release(admission);
        break;
      case 'neutral':
        health.ended();
        health.breaker.release(admission);
        break;
    }
    if (transition === 'opened') {
      this.bus.emit('breaker.opened', {
        target: health.id,
        label: health.label,
        reason: health.breaker.reason ?? 'failures',
        cooldownMs: policy.cooldownMs,
      });
    } else if (transition === 'closed') {
      this.bus.emit('breaker.closed', { target: health.id, label: health.label });
    }
  }

  /**
   * A call's answer has begun reaching the client (a stream's first event). For a half-open trial that is the
   * proof the target serves again: its breaker closes now rather than when the stream ends, which for a long answer
   * kept every other request refused (503, every breaker open) for minutes while the target was answering. Returns
   * the admission the rest of the call counts under: a trial's is 'closed' from here on.
   */
  answered(health: TargetHealth, admission: Admission): Admission {
    if (admission !== 'trial') return admission;
    if (health.breaker.trialAnswered()) this.bus.emit('breaker.closed', { target: health.id, label: health.label });
    return 'closed';
  }

  /**
   * Forgets what was learnt of a provider key's targets: its value was replaced (a renewed key under the same id),
   * so the failures, pauses and open breaker the old value earned say nothing of the new one. An open breaker is
   * reported closed, so an alert about it resolves.
   */
  forgetKey(provider: string, keyId: string, now: number = Date.now()): void {
    const prefix = `${provider}/`;
    const suffix = `#${keyId}`;
    for (const [id, health] of this.targets) if (id.startsWith(prefix) && id.endsWith(suffix)) this.forget(health, now);
  }

  /**
   * Forgets the targets of a provider taken out of the config: nothing calls them any more, so an open breaker there
   * would never close, and an alert about it never resolve (until a restart). Put back later, it starts afresh.
   */
  forgetProvider(provider: string, now: number = Date.now()): void {
    const prefix = `${provider}/`;
    for (const [id, health] of this.targets) if (id.startsWith(prefix)) this.forget(health, now);
  }

  /** Drops a target's health; an open (or half-open) breaker is reported closed, so an alert about it resolves. */
  private forget(health: TargetHealth, now: number): void {
    this.targets.delete(health.id);
    if (health.breaker.stateNow(now) !== 'closed') this.bus.emit('breaker.closed', { target: health.id, label: health.label });
  }

  private evictIdle(): void {
    const now = Date.now();
    const byAge = [...this.targets.values()].sort((a, b) => a.lastUsedAt - b.lastUsedAt);
    for (const health of byAge.slice(0, Math.ceil(MAX_TARGETS / 10))) this.forget(health, now);
  }
}
