import type { Observable } from 'rxjs';
import type { EventBus } from '../bus/bus.js';
import type { RuntimeConfig } from '../config/runtime.js';
import type { ResponseEvent } from '../core/canonical.js';
import type { Log } from '../telemetry/log.js';
import type { UpstreamTransport } from '../providers/transport.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import type { SlidingWindowLimiter } from '../governance/rate-limiter.js';
import type { Reservations } from '../governance/reservations.js';
import type { HealthRegistry } from '../routing/health-registry.js';
import type { RequestContext } from '../core/context.js';

/** Calls the rest of the pipeline; its Observable is the response as the inner stages produce it. */
export type Next = () => Observable<ResponseEvent>;

/**
 * A stage is one layer of the onion. Request-side work happens before it calls `next()`; response-side work
 * maps over the Observable `next()` returns (so it sees streamed and non-streamed answers alike). A stage may
 * answer without calling `next()` (cache hit, guardrail block) or fail with a GatewayError.
 * Unsubscribing (client gone) must release whatever the stage holds.
 */
export interface Stage {
  readonly name: string;
  run(ctx: RequestContext, next: Next): Observable<ResponseEvent>;
  /**
   * Releases what this stage holds (an index, an exporter) when its config version is retired: superseded by a
   * newer version and no request still running on it. Called once; errors are logged, never thrown at a request.
   */
  close?(): void | Promise<void>;
}

/** Shared services a stage may use. Stages emit on the bus; they never call subscribers directly. */
export interface StageDeps {
  bus: EventBus;
  log: Log;
  transport: UpstreamTransport;
  /** Virtual keys, teams, spend and the request log. */
  governance: GovernanceStore;
  /** Requests and tokens per minute, per key, key and model, and team (in memory, per instance). */
  limiter: SlidingWindowLimiter;
  /** Budget held by requests in flight. */
  reservations: Reservations;
  /** Health, adaptive weights and circuit breakers of every target, across config versions. */
  health: HealthRegistry;
}

/**
 * Builds a stage for one config version. Returning null means "not configured": the stage is left out of the
 * pipeline and costs nothing per request.
 */
export interface StageFactory {
  readonly name: string;
  create(config: RuntimeConfig, deps: StageDeps): Stage | null;
}
