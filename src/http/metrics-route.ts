import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { gatewayError } from '../core/errors.js';
import type { HttpDeps } from './deps.js';

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** Whether the request carries `Authorization: Bearer <token>`; both sides hashed, compared in constant time. */
function presentsToken(header: string | undefined, token: string): boolean {
  const match = header ? /^Bearer\s+(\S.*)$/i.exec(header.trim()) : null;
  const presented = match?.[1]?.trim();
  return presented !== undefined && timingSafeEqual(sha256(presented), sha256(token));
}

/**
 * GET /metrics: Prometheus text format. Open by default like other exporters; `settings.metrics.bearer_token`
 * (or TOLLGATE_METRICS_TOKEN) requires a bearer token, and `settings.metrics.enabled: false` turns it off (404).
 */
export function registerMetricsRoute(app: FastifyInstance, deps: HttpDeps): void {
  app.get('/metrics', async (request, reply) => {
    const { metrics: settings } = deps.config.current().settings;
    if (!settings.enabled || !deps.metrics) throw gatewayError('unknown_url', 'Metrics are turned off (settings.metrics.enabled).');
    if (settings.bearerToken !== null && !presentsToken(request.headers.authorization, settings.bearerToken)) {
      throw gatewayError('invalid_metrics_token', 'GET /metrics requires `Authorization: Bearer <token>` with the token set in settings.metrics.bearer_token.', {
        headers: { 'www-authenticate': 'Bearer realm="tollgate-metrics"' },
      });
    }
    const body = await deps.metrics.render();
    return reply.header('content-type', deps.metrics.contentType).header('cache-control', 'no-store').send(body);
  });
}
