import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from './deps.js';

export interface HealthStatus {
  status: 'ok';
  version: string;
  uptime_seconds: number;
  config_version: number;
  /** The last config file save that was rejected (the gateway serves on), until a later save is accepted. */
  config_file_rejection: { file: string; at: string; reason: string } | null;
}

/** The liveness answer: version, uptime, the config version being served and a rejected config file save. */
export function healthStatus(deps: HttpDeps): HealthStatus {
  return {
    status: 'ok',
    version: deps.version,
    uptime_seconds: Math.round((Date.now() - deps.startedAt) / 1000),
    config_version: deps.config.current().version,
    config_file_rejection: deps.config.fileRejection(),
  };
}

/** Liveness: answers once the gateway serves; during shutdown fastify answers 503 for new requests. */
export function registerHealthRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.get('/health', async () => healthStatus(deps));
}
