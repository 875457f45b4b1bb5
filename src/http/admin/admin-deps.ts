import type { ConfigService } from '../../config/config-service.js';
import type { GovernanceStore } from '../../governance/governance-store.js';
import type { HealthRegistry } from '../../routing/health-registry.js';
import type { Log } from '../../log.js';
import type { UsageSource } from '../../governance/usage-report.js';
import type { CacheSelector } from '../../cache/cache-store.js';
import type { AlertsView } from '../../telemetry/alerts/alert-service.js';
import type { McpHubView } from '../../mcp/mcp-hub.js';
import type { McpCallRecord } from '../../telemetry/mcp-call-log.js';

/** What the management API needs: the config service does the work, this layer only parses and renders. */
export interface AdminDeps {
  configService: ConfigService;
  /** Virtual keys, teams and the request log. */
  governance: GovernanceStore;
  /** When set, every /api request needs `Authorization: Bearer <adminKey>`; otherwise only loopback clients are answered. */
  adminKey: string | null;
  log: Log;
  /** Target health, adaptive weights and breakers, for the route health view. */
  health: HealthRegistry;
  /** Usage rollups per group and interval (GET /api/usage). */
  usage: UsageSource;
  /** The response cache (GET and DELETE /api/cache). */
  cache: { report(): Record<string, unknown>; delete(selector: CacheSelector): Promise<number> };
  /** Open alerts, the delivery log, test deliveries (/api/alerts). */
  alerts: AlertsView;
  /** MCP servers, their health and tools (/api/mcp). */
  mcp: McpHubView;
  /** The MCP tool-call log, newest first (/api/mcp/calls). */
  mcpCalls: { list(query: { limit: number; keyId?: string | undefined; server?: string | undefined }): McpCallRecord[] };
}
