import type { EventBus } from './bus/bus.js';
import type { CacheService } from './cache/cache-service.js';
import type { GovernanceStore } from './governance/governance-store.js';
import type { SlidingWindowLimiter } from './governance/rate-limiter.js';
import type { Reservations } from './governance/reservations.js';
import type { UpstreamTransport } from './providers/transport.js';
import type { HealthRegistry } from './routing/health-registry.js';
import type { Log } from './log.js';
import { serviceKey, type ServiceKey, type Services } from './core/plugin.js';
import type { ChatCompletion, ChatCompletionRequest } from './core/canonical.js';
import type { McpHub } from './core/mcp.js';

/** Requests the gateway makes for itself through its own pipeline: routed, keyed, retried, costed and logged. */
export interface InProcessCalls {
  /**
   * A non-streamed chat completion as an internal caller; `purpose` marks the request (stages that must not see
   * their own calls, such as guardrails, let it through), `signal` abandons it.
   */
  chat(request: ChatCompletionRequest, options: { purpose: string; signal?: AbortSignal; chargeTo?: { keyId: string; teamId: string | null } | null }): Promise<ChatCompletion>;
}

/**
 * The services the gateway offers stages, built-in and users' alike, one typed key each. A stage gets only those
 * it lists in `requires`, so a test of a stage needs only those (no database for one that does not ask for it),
 * and cluster mode can later register a shared limiter or reservations under the same keys.
 */
export const BUS = serviceKey<EventBus>('bus');
export const LOG = serviceKey<Log>('log');
export const TRANSPORT = serviceKey<UpstreamTransport>('transport');
export const GOVERNANCE = serviceKey<GovernanceStore>('governance');
export const LIMITER = serviceKey<SlidingWindowLimiter>('limiter');
export const RESERVATIONS = serviceKey<Reservations>('reservations');
export const HEALTH = serviceKey<HealthRegistry>('health');
export const CACHE = serviceKey<CacheService>('cache');
export const IN_PROCESS = serviceKey<InProcessCalls>('in-process');
export const MCP = serviceKey<McpHub>('mcp');

/**
 * The ids of the services the gateway registers (gateway.ts sets each of them, and checks that it did): what
 * `tollgate check-config` holds a plugin's `requires` to without starting a gateway.
 */
export const GATEWAY_SERVICE_IDS: ReadonlySet<string> = new Set([BUS, LOG, TRANSPORT, GOVERNANCE, LIMITER, RESERVATIONS, HEALTH, CACHE, IN_PROCESS, MCP].map((key) => key.id));

/**
 * Every service the gateway holds, by key id. Keys are compared by id, not identity, so a plugin package built
 * against its own copy of tollgate's keys still finds the services.
 */
export class ServiceRegistry {
  private readonly services = new Map<string, unknown>();

  set<T>(key: ServiceKey<T>, service: T): this {
    this.services.set(key.id, service);
    return this;
  }

  has(key: ServiceKey<unknown>): boolean {
    return this.services.has(key.id);
  }

  /** The ids of the services registered. */
  ids(): string[] {
    return [...this.services.keys()];
  }

  /** The view one plugin gets: only the keys it listed in `requires`, so what it uses is declared up front. */
  scoped(plugin: string, required: readonly ServiceKey<unknown>[]): Services {
    const allowed = new Set(required.map((key) => key.id));
    const services = this.services;
    return {
      get<T>(key: ServiceKey<T>): T {
        if (!allowed.has(key.id)) {
          throw new Error(`plugin "${plugin}" asked for service "${key.id}" without listing it in requires (it lists: ${[...allowed].join(', ') || 'none'})`);
        }
        if (!services.has(key.id)) throw new Error(`plugin "${plugin}": this gateway has no service "${key.id}"`);
        return services.get(key.id) as T;
      },
      has(key: ServiceKey<unknown>): boolean {
        return allowed.has(key.id) && services.has(key.id);
      },
    };
  }

  /** A service for the gateway's own wiring (the runner needs the bus and the log); stages go through `scoped`. */
  require<T>(key: ServiceKey<T>): T {
    if (!this.services.has(key.id)) throw new Error(`this gateway has no service "${key.id}"`);
    return this.services.get(key.id) as T;
  }
}
