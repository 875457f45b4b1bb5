import type { Stage } from '../core/stage.js';
import type { EventBus } from '../bus/bus.js';
import type { RuntimeConfig } from '../core/config.js';
import type { Log } from '../telemetry/log.js';
import type { UpstreamTransport } from '../providers/transport.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import type { SlidingWindowLimiter } from '../governance/rate-limiter.js';
import type { Reservations } from '../governance/reservations.js';
import type { HealthRegistry } from '../routing/health-registry.js';

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
