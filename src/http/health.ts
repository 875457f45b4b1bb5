import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from './deps.js';

export interface HealthStatus {
  status: 'ok';
  version: string;
  uptime_seconds: number;
  config_version: number;
  /** The last config file save that was rejected (the gateway serves on), until a later save is accepted. */
  config_file_rejection: { file: string; at: string; reason: string } | null;
  /**
   * The configured MCP servers' connections. A server that is not ready leaves `status` at `ok` (the gateway serves
   * on); `ready` and each server's `state` tell.
   */
  /**
   * What is still loading in the background since start: `cache_semantic_index`, `cache_embedder`,
   * `request_log_error_index`, `model_prices` (the model list's prices, worked out a few ms at a time between
   * requests after start and after a config change adds providers). The gateway serves meanwhile (the cache answers
   * from its exact tier, the semantic tier counts as skipped); empty once everything is loaded.
   */
  loading: string[];
  mcp: { ready: number; configured: number; servers: Array<{ name: string; type: 'stdio' | 'http'; state: string; tools: number; last_error: string | null }> };
}

function mcpHealth(deps: HttpDeps): HealthStatus['mcp'] {
  const servers = deps.mcp.health().map((server) => ({ name: server.name, type: server.type, state: server.state, tools: server.tools, last_error: server.lastError }));
  return { ready: servers.filter((server) => server.state === 'ready').length, configured: servers.length, servers };
}

/** The liveness answer: version, uptime, the config version being served and a rejected config file save. */
export function healthStatus(deps: HttpDeps): HealthStatus {
  return {
    status: 'ok',
    version: deps.version,
    uptime_seconds: Math.round((Date.now() - deps.startedAt) / 1000),
    config_version: deps.config.current().version,
    config_file_rejection: deps.config.fileRejection(),
    loading: [...(deps.loading?.() ?? [])],
    mcp: mcpHealth(deps),
  };
}

/** Liveness: answers once the gateway serves; while it drains, a 503 `shutting_down` (src/http/app.ts). */
export function registerHealthRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.get('/health', async () => healthStatus(deps));
}
