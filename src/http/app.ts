import Fastify, { type FastifyInstance } from 'fastify';
import { GatewayError } from '../errors.js';
import { BODY_LIMIT_CEILING, enforceLiveBodyLimit } from './body-limit.js';
import { parseJsonBody } from './json-body.js';
import { registerAdminRoutes } from './admin/register-admin.js';
import { registerAnthropicRoutes } from './anthropic.js';
import type { HttpDeps } from './deps.js';
import { registerGenAIRoutes } from './genai.js';
import { registerHealthRoutes } from './health.js';
import { registerLiteLLMRoutes } from './litellm.js';
import { registerOpenAIRoutes } from './openai.js';
import { fromFrameworkError, renderOpenAIError, sendUnknownUrl } from './render-error.js';

/** Builds the fastify app: one registration per route family, errors rendered in OpenAI's shape. */
export function buildHttpApp(deps: HttpDeps): FastifyInstance {
  const app = Fastify({
    bodyLimit: BODY_LIMIT_CEILING,
    // Per-request access logs would cost on the hot path; request logs come from the event bus instead.
    logger: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    keepAliveTimeout: 65_000,
  });

  const liveLimit = (): number => deps.config.current().settings.maxBodyBytes;
  enforceLiveBodyLimit(app, liveLimit);

  // The APIs speak JSON only; other bodies get a clear 415 instead of being parsed as text.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, parseJsonBody);

  app.setErrorHandler((err, _request, reply) => {
    const error = fromFrameworkError(err, liveLimit());
    if (error.status >= 500 && !(err instanceof GatewayError)) deps.log.error({ err }, 'unhandled error in HTTP layer');
    const rendered = renderOpenAIError(error);
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
  });

  app.setNotFoundHandler(sendUnknownUrl);

  registerHealthRoutes(app, deps);
  registerOpenAIRoutes(app, deps);
  registerAnthropicRoutes(app, deps);
  registerGenAIRoutes(app, deps);
  registerLiteLLMRoutes(app, deps);
  registerAdminRoutes(app, { configService: deps.config, governance: deps.governance, adminKey: deps.adminKey, log: deps.log, health: deps.health });
  return app;
}
