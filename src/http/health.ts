import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from './deps.js';

/** Liveness: answers once the gateway serves; during shutdown fastify answers 503 for new requests. */
export function registerHealthRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.get('/health', async () => ({
    status: 'ok',
    version: deps.version,
    uptime_seconds: Math.round((Date.now() - deps.startedAt) / 1000),
    config_version: deps.config.current().version,
  }));
}
