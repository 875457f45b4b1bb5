import type { FastifyInstance, FastifyRequest } from 'fastify';
import { modelOfPath } from '../dialects/gemini/model-name.js';
import type { EventBus } from '../bus/bus.js';
import { fromFrameworkError } from './render-error.js';
import { redactedPrefix, redactPath, redactSecrets } from '../core/redact-secrets.js';
import { refusalChannel } from '../core/trace-channels.js';
import { summaryWithoutUpstream } from '../core/events.js';

/** A request header's one value, or null. */
function headerValue(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  return typeof value === 'string' ? value : null;
}

/** The client format of a model route, by its mount. */
function dialectOf(path: string): string {
  if (path.startsWith('/anthropic')) return 'anthropic';
  if (path.startsWith('/genai')) return 'gemini';
  if (path.startsWith('/litellm')) return 'litellm';
  if (/^(?:\/v1)?\/responses(?:\/compact)?$/.test(path)) return 'openai-responses';
  return 'openai';
}

/**
 * `/anthropic/v1/messages/count_tokens`, `/v1/responses/input_tokens`, or a `/genai` call of the `countTokens` method
 * (`.../models/<model>:countTokens`).
 */
function isTokenCount(route: string, url: string): boolean {
  if (route.endsWith('/count_tokens') || route.endsWith('/responses/input_tokens')) return true;
  if (!route.startsWith('/genai')) return false;
  const path = url.split('?')[0] ?? '';
  return path.endsWith(':countTokens');
}

function requestedModel(request: FastifyRequest, path: string): string {
  const body = request.body as { model?: unknown } | undefined;
  if (body && typeof body.model === 'string') return body.model;
  // Gemini names the model in the path (never the query): /genai/v1beta/models/<model>:<method>. The model may hold
  // slashes (`openai/gpt-4o`, as the Gen AI SDK writes it) and colons (`bedrock/...-v2:0`): the method follows the
  // last colon, as the route reads it (dialects/gemini/model-name.ts).
  const at = path.indexOf('/models/');
  if (at === -1) return '';
  const rest = path.slice(at + '/models/'.length);
  const colon = rest.lastIndexOf(':');
  // A malformed escape (`%ZZ`): the name as sent.
  return modelOfPath(colon === -1 ? rest : rest.slice(0, colon), (raw) => raw);
}

/**
 * Model calls refused before they reached the pipeline (a body that is not JSON, too large, or not a valid
 * request) still end in a `request.failed`, so the request log, metrics and usage count every refused call. Calls
 * the pipeline took (its `request.received`) are its to report, so nothing is reported twice. Only POSTs to a known model route count; the management API and unknown URLs do not.
 */
export function reportRefusedCalls(
  app: FastifyInstance,
  bus: EventBus,
  maxBodyBytes: () => number,
  /**
   * The virtual key (and its team) whose secret the call presents, as its route reads it; null for none or an unknown
   * one. A known key's refused calls carry it, so the key's log and usage show them (a refusal costs nothing).
   */
  keyOf: (request: FastifyRequest, dialect: string) => { keyId: string; teamId: string | null } | null = () => null,
  maxTracked = 100_000,
): void {
  const errors = new WeakMap<FastifyRequest, { type: string; code: string | null; message: string }>();
  // Requests the pipeline took (its own terminal event reports them), by id, until their response ends.
  const inPipeline = new Set<string>();
  bus.on('request.received', (event) => {
    // A bound against responses whose end never fires (a socket torn down mid-write): the oldest is forgotten. Clearing
    // them all forgot the calls still running too, and those that then failed were reported twice (their log entry
    // overwritten by a bare one, their usage counted again).
    if (inPipeline.size >= maxTracked) inPipeline.delete(inPipeline.values().next().value as string);
    inPipeline.add(event.requestId);
  });
  // A response its client left (or the shutdown cut) never finishes, so no onResponse comes to forget its call: its
  // terminal event does (a client that left 499s every stream it stops, and each stayed here).
  const forget = (event: { requestId: string; cancelled: boolean }): void => {
    if (event.cancelled) inPipeline.delete(event.requestId);
  };
  bus.on('request.completed', forget);
  bus.on('request.failed', forget);
  /** A POST to a model route: a model call whose refusal is reported here when the pipeline never took it. */
  const modelCall = (request: FastifyRequest): boolean => {
    const route = request.routeOptions.url;
    // MCP tool calls are no model calls: their outcomes are `mcp.tool.*` events, their refusals `auth.rejected` or the answer.
    if (request.method !== 'POST' || !route || route.startsWith('/api') || route === '/mcp' || route.startsWith('/v1/mcp/')) return false;
    // Token counts are no model calls either (no model is called, nothing is charged, an answered one is reported
    // nowhere): a failed count reported as a failed chat request raised the error ratio of clients that count often.
    if (isTokenCount(route, request.url)) return false;
    // Calls on a stored Response (cancel) report themselves, with the key that made them (see responses/routes/stored.ts).
    return !/\/responses\/:id/.test(route) && bus.hasListeners('request.failed');
  };
  /** Calls reported as left mid-upload (see onError): never reported again. */
  const abandoned = new WeakSet<FastifyRequest>();
  app.addHook('onError', (request, _reply, err, done) => {
    if (request.raw.destroyed && !request.raw.complete) {
      // The client left while its request's body was still coming: its body parser failed (`aborted`), and no
      // response can go out, so no onResponse comes. Its call is reported here, as the 499 a client that leaves later
      // gets from the pipeline. (Here rather than in an onRequestAbort hook, which fastify pays for with a `close`
      // listener on every request.)
      if (!inPipeline.has(request.id) && modelCall(request) && !abandoned.has(request)) {
        abandoned.add(request);
        // The request's id is its arrival time (epoch ms, request-id.ts): how long the client kept it open.
        const arrived = Number(request.id.slice(0, 15));
        report(request, 499, Number.isFinite(arrived) ? Math.max(0, Date.now() - arrived) : 0, { type: 'invalid_request_error', code: 'client_cancelled', message: 'The client closed the connection before its request was read whole.' }, true);
      }
      return done();
    }
    const error = fromFrameworkError(err, maxBodyBytes());
    errors.set(request, { type: error.type, code: error.code, message: error.message });
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (inPipeline.delete(request.id)) return done();
    if (reply.statusCode < 400 || abandoned.has(request) || !modelCall(request)) return done();
    report(request, reply.statusCode, reply.elapsedTime, errors.get(request) ?? { type: 'invalid_request_error', code: null, message: `HTTP ${reply.statusCode}` }, false);
    done();
  });

  function report(request: FastifyRequest, status: number, durationMs: number, error: { type: string; code: string | null; message: string }, cancelled: boolean): void {
    const path = request.url.split('?')[0] ?? '';
    const dialect = dialectOf(path);
    const key = keyOf(request, dialect);
    // A tracer gives the call its span under the client's trace (see refusalChannel).
    if (refusalChannel.hasSubscribers) refusalChannel.publish({ requestId: request.id, traceparent: headerValue(request, 'traceparent'), tracestate: headerValue(request, 'tracestate') });
    bus.emit(
      'request.failed',
      Object.assign(
        summaryWithoutUpstream({
          requestId: request.id,
          dialect,
          // A /genai path names the model: a key pasted into it is redacted as from the model name.
          path: redactPath(path),
          operation: /embed/i.test(path) ? 'embeddings' : 'chat',
          model: redactedPrefix(requestedModel(request, path), 256),
          keyId: key?.keyId ?? null,
          teamId: key?.teamId ?? null,
          status,
          durationMs,
        }),
        error,
        { message: redactSecrets(error.message), cancelled },
      ),
    );
  }
}
