import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Settings } from '../core/config.js';
import { GatewayError } from '../core/errors.js';
import { clientErrorHandler, renderErrorForPath } from './client-error.js';
import { BODY_LIMIT_CEILING, enforceLiveBodyLimit } from './body-limit.js';
import { parseDeclaredJsonBody } from './json-body.js';
import { answerCrossOrigin } from './cors.js';
import { newRequestId } from '../core/request-id.js';
import { registerAdminRoutes } from './admin/register-admin.js';
import { registerAnthropicRoutes } from '../dialects/anthropic/routes/register.js';
import type { HttpDeps } from './deps.js';
import { registerGenAIRoutes } from '../dialects/gemini/routes/register.js';
import { DEFAULT_DASHBOARD_DIR, registerDashboardRoutes } from './dashboard-route.js';
import { registerHealthRoutes } from './health.js';
import { registerMetricsRoute } from './metrics-route.js';
import { registerMcpRoutes } from './mcp-routes.js';
import { reportRefusedCalls } from './refusal-events.js';
import { refusedCallKey } from './refused-call-key.js';
import { registerLiteLLMRoutes } from '../dialects/litellm/routes/register.js';
import { registerOpenAIRoutes } from '../dialects/openai/routes/register.js';
import { registerLegacyCompletionsRoutes } from '../dialects/openai/routes/legacy-completions.js';
import { registerResponsesRoutes } from '../dialects/responses/routes/register.js';
import { fromFrameworkError, renderOpenAIError, sendUnknownUrl } from './render-error.js';
import { gatewayError } from '../core/errors.js';
import { withFields } from '../core/with-fields.js';

/**
 * Node checks the request clocks every `connectionsCheckingInterval` (30 s by default), so a timeout can run
 * over by up to that much; a tenth of the shorter timeout keeps the overrun small at a negligible cost (the
 * check visits only connections still sending a request).
 */
function receiveTimeouts(settings: Settings): { requestTimeout: number; headersTimeout: number; checkInterval: number } {
  const requestTimeout = settings.requestTimeoutMs;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(settings.headersTimeoutMs, requestTimeout);
  const checkInterval = Math.min(5_000, Math.max(25, Math.floor(headersTimeout / 10)));
  return { requestTimeout, headersTimeout, checkInterval };
}

/** Builds the fastify app: one registration per route family, errors rendered in OpenAI's shape. */
export function buildHttpApp(deps: HttpDeps): FastifyInstance {
  const timeouts = receiveTimeouts(deps.config.current().settings);
  const app = Fastify({
    bodyLimit: BODY_LIMIT_CEILING,
    // Per-request access logs would cost on the hot path; request logs come from the event bus instead.
    logger: false,
    // Every answer carries the request's id (`x-request-id`, set below); the request log keeps it under the same id.
    genReqId: () => newRequestId(),
    // While draining, a new request on a connection still open is answered by the hook below, in its route family's
    // error shape with its request id; fastify's own 503 is in neither.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    keepAliveTimeout: 65_000,
    // Receiving a request is bounded (a client that trickles headers or a body cannot hold a connection for
    // ever); sending the answer is not: Node stops these clocks once the request is fully read, so long
    // streams run on. Read from the config at start only: the server is built once.
    requestTimeout: timeouts.requestTimeout,
    http: { headersTimeout: timeouts.headersTimeout, connectionsCheckingInterval: timeouts.checkInterval },
    // What Node's parser rejects, and requests that time out, answered in the error shape of the route family.
    clientErrorHandler: clientErrorHandler(deps.log),
    // A path the router cannot decode (`%ED%A0%80`, a lone surrogate) or a parameter past its length, likewise.
    frameworkErrors: (err, request, reply) => {
      const error =
        err.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? gatewayError('url_too_long', 'A part of the request URL is too long.')
          : gatewayError('invalid_url', 'The request URL is not validly encoded: percent-escapes must spell UTF-8.');
      answerWithError(request, reply, error);
    },
  });

  // Every answer carries its request id: fastify's own replies (errors of the body parser: 400 invalid_json, 413,
  // 415; unknown URLs; the admin API) get it from here, and the traffic routes, which write their answers
  // themselves, put it in the headers they write. It is a reply header, not one set on the raw response: a header
  // set there ahead of `writeHead` sends every answer down Node's slow path (each header merged through
  // `setHeader`), a few KiB of garbage and some microseconds a request.
  //
  // Draining (SIGTERM, gateway.close()): the server accepts no connection, but a request can still arrive on one that
  // is open (busy with a stream in flight, pipelined, or between two reaps of idle ones). It is not started: a 503 that
  // clients and load balancers retry elsewhere, and the connection closes once the answers before it are written.
  // (One hook for both: a hook is a call on every request.)
  let draining = false;
  app.addHook('preClose', (done) => {
    draining = true;
    done();
  });
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // Browsers send Origin (server-side clients do not): CORS, and a preflight answered here.
    if (request.headers.origin !== undefined && answerCrossOrigin(request, reply)) return;
    if (!draining) return done();
    const error = gatewayError('shutting_down', 'The gateway is shutting down and takes no new requests; retry, another instance or the restarted one will answer.');
    answerWithError(request, reply, error, { connection: 'close' });
  });

  const liveLimit = (): number => deps.config.current().settings.maxBodyBytes;
  enforceLiveBodyLimit(app, liveLimit);

  // The APIs speak JSON only; other bodies get a clear 415 instead of being parsed as text.
  app.removeContentTypeParser('text/plain');
  app.removeContentTypeParser('application/json');
  // As bytes, not a string: decoding would silently turn bytes that are not UTF-8 into U+FFFD; the parser checks them
  // (and refuses a body declared in another charset).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseDeclaredJsonBody);

  app.setErrorHandler((err, _request, reply) => {
    const error = fromFrameworkError(err, liveLimit());
    if (error.status >= 500 && !(err instanceof GatewayError)) deps.log.error({ err }, 'unhandled error in HTTP layer');
    const rendered = renderOpenAIError(error);
    return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
  });

  app.setNotFoundHandler(sendUnknownUrl);
  // Model calls refused before the pipeline (bad JSON, too large, invalid) are reported like the pipeline's refusals.
  reportRefusedCalls(app, deps.bus, liveLimit, refusedCallKey(deps.governance));

  registerHealthRoutes(app, deps);
  registerMetricsRoute(app, deps);
  registerOpenAIRoutes(app, deps);
  registerLegacyCompletionsRoutes(app, deps);
  registerResponsesRoutes(app, deps);
  registerAnthropicRoutes(app, deps);
  registerGenAIRoutes(app, deps);
  registerLiteLLMRoutes(app, deps);
  registerMcpRoutes(app, deps);
  registerAdminRoutes(app, { configService: deps.config, governance: deps.governance, adminKey: deps.adminKey, log: deps.log, health: deps.health, usage: deps.usage, cache: deps.cache, alerts: deps.alerts, mcp: deps.mcp, mcpCalls: deps.mcpCalls });
  registerDashboardRoutes(app, deps.dashboardDir ?? DEFAULT_DASHBOARD_DIR);
  return app;
}

/** Answers `error` in the error shape of the request's route family, with its request id, outside fastify's reply. */
function answerWithError(request: FastifyRequest, reply: FastifyReply, error: GatewayError, extraHeaders: Record<string, string> = {}): void {
  const rendered = renderErrorForPath(request.raw.url?.split('?')[0] ?? null, error, request.id);
  reply.hijack();
  reply.raw.writeHead(rendered.status, withFields(rendered.headers, extraHeaders));
  reply.raw.end(rendered.body);
}
