import type { FastifyInstance, FastifyRequest } from 'fastify';
import { embeddingsAsChat, parseEmbeddingsRequest } from '../dialects/openai/parse-embeddings.js';
import { parseChatCompletionRequest, takeRequestFallbacks } from '../dialects/openai/parse-request.js';
import { createRequestContext } from '../pipeline/context.js';
import { filterModels, modelEntries, type ModelEntry } from '../providers/catalog/model-list.js';
import type { RuntimeConfig } from '../config/runtime.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from './deps.js';
import { respondOpenAI } from './respond.js';

/** The OpenAI list shape for the unfiltered list depends only on the config version: serialized once per version. */
const modelLists = new WeakMap<RuntimeConfig, string>();

function openAIModelList(entries: readonly ModelEntry[], created: number): string {
  return JSON.stringify({ object: 'list', data: entries.map((entry) => ({ id: entry.id, object: 'model', created, owned_by: entry.provider })) });
}

function headerString(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first ? first.trim() || null : null;
}

/** The key a client presents: `Authorization: Bearer` (OpenAI SDKs) or `x-api-key` (Anthropic SDKs). */
function presentedCredential(request: FastifyRequest): string | null {
  const authorization = headerString(request, 'authorization');
  if (authorization) {
    const match = /^Bearer\s+(.+)$/i.exec(authorization);
    if (match?.[1]) return match[1].trim();
  }
  return headerString(request, 'x-api-key');
}

/** A non-empty string query parameter. */
function queryParam(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The OpenAI-compatible API under `/v1`. */
export function registerOpenAIRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.post('/v1/chat/completions', async (request, reply) => {
    const chat = parseChatCompletionRequest(request.body);
    const requestFallbacks = takeRequestFallbacks(chat);
    const config = deps.config.current();
    const ctx = createRequestContext({
      dialect: 'openai',
      config,
      request: chat,
      clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
      requestFallbacks,
      credential: presentedCredential(request),
    });
    // The answer is written to the raw response so chunks go out as they arrive, without framework buffering.
    reply.hijack();
    await respondOpenAI(reply.raw, ctx, deps.pipelineFor(config).execute(ctx));
  });

  // Embeddings go through the same pipeline as chat: keys, limits, budgets, routing, retries, cost.
  app.post('/v1/embeddings', async (request, reply) => {
    const embeddings = parseEmbeddingsRequest(request.body);
    const config = deps.config.current();
    const ctx = createRequestContext({
      dialect: 'openai',
      config,
      request: embeddingsAsChat(embeddings),
      embeddings,
      clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
      credential: presentedCredential(request),
    });
    reply.hijack();
    await respondOpenAI(reply.raw, ctx, deps.pipelineFor(config).execute(ctx));
  });

  // `?provider=` and `?search=` narrow the list (tollgate's addition; OpenAI's own list takes no filters).
  app.get('/v1/models', async (request, reply) => {
    const config = deps.config.current();
    const created = Math.floor(deps.startedAt / 1000);
    const provider = queryParam(request.query, 'provider');
    const search = queryParam(request.query, 'search');
    let body: string;
    if (provider === undefined && search === undefined) {
      body = modelLists.get(config) ?? openAIModelList(modelEntries(config), created);
      modelLists.set(config, body);
    } else {
      body = openAIModelList(filterModels(modelEntries(config), { provider, search }), created);
    }
    return reply.type('application/json; charset=utf-8').send(body);
  });
}
