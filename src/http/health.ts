import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from './deps.js';

/** The liveness answer: version, uptime and the config version being served. */
export function healthStatus(deps: HttpDeps): { status: 'ok'; version: string; uptime_seconds: number; config_version: number } {
  return {
    status: 'ok',
    version: deps.version,
    uptime_seconds: Math.round((Date.now() - deps.startedAt) / 1000),
    config_version: deps.config.current().version,
  };
}

/** Liveness: answers once the gateway serves; during shutdown fastify answers 503 for new requests. */
export function registerHealthRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.get('/health', async () => healthStatus(deps));
}
