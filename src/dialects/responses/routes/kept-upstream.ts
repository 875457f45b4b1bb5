import type { FastifyReply, FastifyRequest } from 'fastify';
import { withBaseQuery } from '../../../providers/base-url.js';
import { request as undiciRequest } from 'undici';
import { gatewayError } from '../../../core/errors.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { headerString } from '../../../http/request-headers.js';
import { adapterFor } from '../../../providers/registry.js';
import { RESPONSES_FORMAT } from '../../../wire/openai-responses/format.js';
import { upstreamErrorFromBody } from '../../../providers/upstream-error.js';
import { resolveCandidates } from '../../../routing/resolve-target.js';
import type { StoredResponse } from '../../../store/response-store.js';

/**
 * A call on a Response an upstream kept itself (OpenAI's Responses API, `store` not false), made to that provider with
 * the key that made it (or, when that key is gone, another of the provider's that serves the model): the same method,
 * path under the provider's base URL and query, and the provider's answer as it came. tollgate checked it is the
 * caller's first; only a key's own Responses are asked for. A deletion the provider confirms is forgotten here too.
 */
export async function forwardToProvider(deps: HttpDeps, found: { id: string; scope: string; record: StoredResponse }, request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const config = deps.config.current();
  const name = found.record.provider ?? 'openai';
  if (!config.providers.has(name)) throw gatewayError('provider_not_found', `The provider '${name}' that keeps response '${found.id}' is no longer configured.`);
  const candidates = resolveCandidates(config, `${name}/${found.record.upstream_model ?? 'responses'}`, headerString(request, CLIENT_PROVIDER_KEY_HEADER));
  const target = (candidates.find((candidate) => candidate.target.keyId === (found.record.provider_key_id ?? null)) ?? candidates[0])?.target;
  if (!target) throw gatewayError('provider_key_missing', `No key of provider '${name}' can reach response '${found.id}'.`);
  const { provider } = target;
  const adapter = adapterFor(provider.vendor.format);
  if (!adapter) throw gatewayError('provider_not_found', `The provider '${name}' that keeps response '${found.id}' is no longer configured.`);
  // Where and how this provider takes a new Response (its URL, API version and headers, Entra's token on Azure): the
  // kept one is under it, at /{id} and the path's rest, with the client's query beside the provider's own.
  const built = adapter.buildChatRequest({ model: target.model, messages: [] }, target, { format: RESPONSES_FORMAT, body: {} });
  const authorized = adapter.authorize ? await adapter.authorize(built, target, deps.outbound.dispatcher) : built;
  const url = new URL(withBaseQuery(authorized.url, provider.baseQuery));
  const rest = (request.url.split('?')[0] ?? '').replace(/^(?:\/v1)?\/responses\/[^/]+/, '');
  url.pathname = `${url.pathname.replace(/\/$/, '')}/${encodeURIComponent(found.id)}${rest}`;
  const query = new URLSearchParams(request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : '');
  for (const [key, value] of query) url.searchParams.append(key, value);
  let answer: Awaited<ReturnType<typeof undiciRequest>>;
  try {
    answer = await undiciRequest(url, {
      dispatcher: deps.outbound.dispatcher,
      method: request.method as 'GET' | 'DELETE' | 'POST',
      headers: authorized.headers,
      ...(request.method === 'POST' ? { body: '{}' } : {}),
      headersTimeout: provider.timeouts.firstByteMs,
      bodyTimeout: provider.timeouts.idleMs,
      signal: AbortSignal.timeout(provider.timeouts.totalMs),
    });
  } catch {
    throw gatewayError('upstream_unreachable', `${name}: the upstream could not be reached.`);
  }
  const text = await answer.body.text().catch(() => {
    throw gatewayError('upstream_unreachable', `${name}: the upstream's answer broke off.`);
  });
  if (answer.statusCode >= 400) throw upstreamErrorFromBody(name, answer.statusCode, answer.headers, text);
  if (request.method === 'DELETE') await deps.responses.delete(found.id, found.scope);
  const type = answer.headers['content-type'];
  return reply.code(answer.statusCode).header('content-type', typeof type === 'string' ? type : 'application/json').send(text);
}
