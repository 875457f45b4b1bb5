import type { ConfigService } from '../config/config-service.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import type { RuntimeConfig } from '../core/config.js';
import type { Pipeline } from '../pipeline/runner.js';
import type { HealthRegistry } from '../routing/health-registry.js';
import type { Log } from '../log.js';
import type { EventBus } from '../bus/bus.js';
import type { AdminDeps } from './admin/admin-deps.js';
import type { McpHubView } from '../mcp/mcp-hub.js';
import type { SlidingWindowLimiter } from '../governance/rate-limiter.js';
import type { Outbound } from '../network/outbound-network.js';
import type { ResponseStore } from '../store/response-store.js';

/** What the HTTP layer needs from the gateway; routes parse and render, the pipeline decides. */
export interface HttpDeps {
  config: ConfigService;
  /** The event bus: model calls refused before the pipeline are reported on it like the pipeline's refusals. */
  bus: EventBus;
  governance: GovernanceStore;
  /** The Responses API answers tollgate keeps (previous_response_id, GET/DELETE /v1/responses/{id}). */
  responses: ResponseStore;
  pipelineFor(config: RuntimeConfig): Pipeline;
  log: Log;
  version: string;
  /** Epoch ms when the gateway started serving. */
  startedAt: number;
  /** When set, /api requires `Authorization: Bearer <adminKey>`; otherwise /api answers loopback clients only. */
  adminKey: string | null;
  health: HealthRegistry;
  /** Usage rollups per group and interval (GET /api/usage). */
  usage: AdminDeps['usage'];
  cache: AdminDeps['cache'];
  alerts: AdminDeps['alerts'];
  mcpCalls: AdminDeps['mcpCalls'];
  /** The MCP servers' tools (`/v1/mcp/tools/call`, `/mcp`, `/api/mcp`, `/health`). */
  mcp: McpHubView;
  /** The gateway's way out (proxy, CAs): upstream calls a route makes itself (Anthropic's count_tokens) use it. */
  outbound: Outbound;
  /** The gateway's rate limiter (MCP tool calls per minute share it with the pipeline). */
  limiter: SlidingWindowLimiter;
  /** The Prometheus exposition behind GET /metrics (null: not served). */
  metrics: MetricsExposition | null;
  /** Names of what is still loading in the background after start (the cache's index, ...); empty once all is loaded. */
  loading?: () => readonly string[];
  /** The built web dashboard served at `/` (default: dashboard/dist of this package). */
  dashboardDir?: string;
}

/** What /metrics serves; the telemetry subscriber provides it, the HTTP layer only renders it. */
export interface MetricsExposition {
  readonly contentType: string;
  render(): Promise<string>;
}

/** Header a client may use to bring its own provider key when the gateway has none configured. */
export const CLIENT_PROVIDER_KEY_HEADER = 'x-tollgate-provider-key';
