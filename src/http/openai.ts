import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseChatCompletionRequest, takeRequestFallbacks } from '../dialects/openai/parse-request.js';
import { createRequestContext } from '../pipeline/context.js';
import { catalogModels } from '../providers/catalog/catalog.js';
import type { RuntimeConfig } from '../config/runtime.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from './deps.js';
import { respondOpenAI } from './respond.js';

interface ModelEntry {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
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

const modelLists = new WeakMap<RuntimeConfig, string>();

/** The model list depends only on the config version, so it is built once per version and reused. */
function modelListFor(config: RuntimeConfig, created: number): string {
  const cached = modelLists.get(config);
  if (cached) return cached;
  const data: ModelEntry[] = [];
  for (const provider of config.providers.values()) {
    const seen = new Set<string>();
    for (const model of [...provider.models, ...catalogModels(provider.vendor).map((entry) => entry.id)]) {
      if (seen.has(model)) continue;
      seen.add(model);
      data.push({ id: `${provider.name}/${model}`, object: 'model', created, owned_by: provider.name });
    }
  }
  const body = JSON.stringify({ object: 'list', data });
  modelLists.set(config, body);
  return body;
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

  app.get('/v1/models', async (_request, reply) => {
    const body = modelListFor(deps.config.current(), Math.floor(deps.startedAt / 1000));
    return reply.type('application/json; charset=utf-8').send(body);
  });
}
