import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, gatewayError, toGatewayError } from '../../../core/errors.js';
import type { HttpDeps } from '../../../http/deps.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { checkVirtualKey } from '../../../http/key-check.js';
import { SSE_HEADERS } from '../../../http/answer-stream.js';
import type { StoredResponse } from '../../../store/response-store.js';
import { responseEvents } from '../../../wire/openai-responses/response-events.js';
import { summaryWithoutUpstream } from '../../../core/events.js';
import { presentedCredential } from '../../openai/routes/register.js';
import { conversationTooLong, responseNotFound } from '../conversation.js';
import { listPage } from '../input-item-list.js';
import { scopeOf } from './keeper.js';
import { forwardToProvider } from './kept-upstream.js';

type Json = Record<string, unknown>;

interface Params {
  id: string;
}

/** What a call on a stored Response found: the record, whose it is, and what the log says of it. */
interface Found {
  id: string;
  scope: string;
  record: StoredResponse;
  keyId: string | null;
  teamId: string | null;
}

/**
 * The caller's Response `id`: the key rules as for a model call (they cost no tokens, so no budget or rate limit),
 * then the record when it is the caller's; OpenAI's 404 for one unknown, expired, deleted or another caller's.
 */
function findOwn(deps: HttpDeps, request: FastifyRequest<{ Params: Params }>, found: { keyId: string | null; teamId: string | null }): Found {
  const config = deps.config.current();
  const key = checkVirtualKey(deps.governance, config, isRemoteClient(request, config.settings), presentedCredential(request), null);
  found.keyId = key?.id ?? null;
  found.teamId = key?.team ?? null;
  const { id } = request.params;
  const scope = scopeOf(key?.id);
  const record = deps.responses.get(id, scope);
  if (!record) throw responseNotFound(id);
  return { id, scope, record, keyId: found.keyId, teamId: found.teamId };
}

/**
 * Each call on a stored Response ends in the request log as `request.completed` or `request.failed` (operation
 * `responses.retrieve`, `.delete`, `.input_items`, `.cancel`), with the key that made it; it costs nothing.
 */
function report(deps: HttpDeps, request: FastifyRequest, durationMs: number, operation: string, status: number, who: { keyId: string | null; teamId: string | null }, model: string, error: GatewayError | null): void {
  const summary = Object.assign(
    summaryWithoutUpstream({ requestId: request.id, dialect: 'openai-responses', path: request.url.split('?')[0] ?? '', operation, model, keyId: who.keyId, teamId: who.teamId, status, durationMs }),
    { cancelled: false },
  );
  if (error) deps.bus.emit('request.failed', { ...summary, type: error.type, code: error.code, message: error.message });
  else deps.bus.emit('request.completed', summary);
}

/** The `starting_after` of a streamed retrieve: a sequence number (the replay's events are numbered from 0), -1 when absent. */
function startingAfter(value: unknown): number {
  if (value === undefined) return -1;
  const after = typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  if (!Number.isInteger(after)) throw gatewayError('invalid_type', "Invalid type for 'starting_after': expected an integer (an event's sequence_number).", { param: 'starting_after' });
  return Math.max(after, -1);
}

type Handler = (found: Found, request: FastifyRequest<{ Params: Params; Querystring: Json }>, reply: FastifyReply) => Promise<unknown>;

/** A route on a stored Response: found for its caller, answered, reported; a native one goes to its provider. */
function storedRoute(deps: HttpDeps, operation: string, handler: Handler) {
  return async (request: FastifyRequest<{ Params: Params; Querystring: Json }>, reply: FastifyReply): Promise<unknown> => {
    const who = { keyId: null as string | null, teamId: null as string | null };
    let model = '';
    try {
      const found = findOwn(deps, request, who);
      model = typeof found.record.response?.model === 'string' ? found.record.response.model : '';
      const answer = found.record.response === null ? await forwardToProvider(deps, found, request, reply) : await handler(found, request, reply);
      report(deps, request, reply.elapsedTime, operation, reply.statusCode, who, model, null);
      return answer;
    } catch (err) {
      const error = toGatewayError(err);
      // A fault of tollgate's own (not a refusal, not an upstream's answer) is logged, as the app's handler would.
      if (error.status >= 500 && error.upstreamStatus === undefined && !(err instanceof GatewayError)) deps.log.error({ err, requestId: request.id }, 'stored response call failed');
      report(deps, request, reply.elapsedTime, operation, error.status, who, model, error);
      throw error;
    }
  };
}

/**
 * OpenAI's stored-Response API for the Responses tollgate keeps: GET /v1/responses/{id} (the Response; `stream=true`
 * replays it as its event stream), DELETE (OpenAI's deletion answer), GET .../input_items (the paged list) and POST
 * .../cancel (only background responses can be cancelled, and tollgate runs none). A Response an upstream kept
 * (OpenAI's own) is asked of that provider with its key (kept-upstream.ts).
 */
export function registerStoredResponseRoutes(app: FastifyInstance, deps: HttpDeps): void {
  for (const prefix of ['/v1', '']) {
    app.get<{ Params: Params; Querystring: Json }>(
      `${prefix}/responses/:id`,
      storedRoute(deps, 'responses.retrieve', async ({ record }, request, reply) => {
        const response = record.response as Json;
        if (request.query.stream === 'true') {
          // OpenAI's `starting_after`: only the events after that sequence number (a client resuming a broken stream).
          const after = startingAfter(request.query.starting_after);
          const frames = responseEvents(response)
            .slice(after + 1)
            .map((event) => `event: ${event.event}\ndata: ${event.data}\n\n`)
            .join('');
          return reply.headers(SSE_HEADERS).send(frames);
        }
        return reply.send(response);
      }),
    );
    app.delete<{ Params: Params; Querystring: Json }>(
      `${prefix}/responses/:id`,
      storedRoute(deps, 'responses.delete', async ({ id, scope }, _request, reply) => {
        if (!(await deps.responses.delete(id, scope))) throw responseNotFound(id);
        return reply.send({ id, object: 'response', deleted: true });
      }),
    );
    app.get<{ Params: Params; Querystring: Json }>(
      `${prefix}/responses/:id/input_items`,
      storedRoute(deps, 'responses.input_items', async ({ id, record }, request, reply) => {
        // The whole conversation's items, as OpenAI lists them, walked back from this turn by its links.
        const conversation = deps.responses.conversation(record);
        if ('tooLong' in conversation) throw conversationTooLong(id, conversation);
        return reply.send(listPage(conversation.items, request.query));
      }),
    );
    app.post<{ Params: Params; Querystring: Json }>(
      `${prefix}/responses/:id/cancel`,
      storedRoute(deps, 'responses.cancel', async () => {
        throw gatewayError('invalid_request', 'Only responses created with background=true can be cancelled.');
      }),
    );
  }
}
