import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import { modelListGuard } from '../../../http/key-check.js';
import { parseEmbeddingsRequest } from '../parse-embeddings.js';
import { parseChatCompletionRequest, takeRequestFallbacks } from '../parse-request.js';
import { createRequestContext } from '../../../core/context.js';
import { hasExactNumbers } from '../../../exact-numbers.js';
import { filterModels, findModelEntry, modelEntries, type ModelEntry } from '../../../catalog/model-list.js';
import type { RuntimeConfig } from '../../../core/config.js';
import { bareModelError, isBareName, lookupBareModel, resolveModelName } from '../../../routing/bare-model.js';
import { modelNameError, quotedModelName } from '../../model-name-check.js';
import { isRouteName } from '../../../routing/route-patterns.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { respondOpenAI, type AnswerHeaders } from './respond.js';
import { bearerToken, headerString } from '../../../http/request-headers.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { gatewayError, type GatewayError } from '../../../core/errors.js';

/** The OpenAI list shape for the unfiltered list depends only on the config version: serialized once per version. */
const modelLists = new WeakMap<RuntimeConfig, string>();

function openAIModelList(entries: readonly ModelEntry[], created: number): string {
  return JSON.stringify({ object: 'list', data: entries.map((entry) => ({ id: entry.id, object: 'model', created, owned_by: entry.provider })) });
}

/** What `owned_by` says for a route name: the route belongs to this gateway's config, not to one provider. */
const ROUTE_OWNER = 'tollgate';

/**
 * `GET {prefix}/models/{model}`: the list's entry for a `<provider>/<model>` id, or a configured route's name;
 * the answer's `id` is the name as the client wrote it (a mount may map names, as `/litellm` does).
 */
function retrieveModel(mount: OpenAIMount, config: RuntimeConfig, id: string, created: number): string {
  const badName = id === '' ? "Invalid 'model': the model name is empty." : modelNameError(id);
  if (badName !== null) throw gatewayError('invalid_model_name', badName, { param: 'model' });
  const name = mapped(mount, id, config);
  const entry = findModelEntry(config, name);
  const owner = entry ? entry.provider : isRouteName(config.routes, name) ? ROUTE_OWNER : null;
  if (owner === null) throw unservedModel(config, id, name);
  return JSON.stringify({ id, object: 'model', created, owned_by: owner });
}

/**
 * Why a model cannot be retrieved. A bare name that several configured providers serve gets the error a chat
 * completion gets (`ambiguous_model`, naming each `<provider>/<model>` to use), not a plain "does not exist".
 */
function unservedModel(config: RuntimeConfig, id: string, name: string): GatewayError {
  if (isBareName(config, name)) {
    const found = lookupBareModel(config, name);
    if (found.kind === 'several') return bareModelError(config, name, found);
  }
  return gatewayError('model_not_found', `The model ${quotedModelName(id)} does not exist or is not served by this gateway.`, { param: 'model' });
}

/** The key a client presents: `Authorization: Bearer` (OpenAI SDKs) or `x-api-key` (Anthropic SDKs). */
export function presentedCredential(request: FastifyRequest): string | null {
  return bearerToken(request) ?? headerString(request, 'x-api-key');
}

/** A non-empty string query parameter. */
function queryParam(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** Maps the model name a client wrote to tollgate's (`<provider>/<model>` or a route name) for one config version. */
export type ModelNameMapper = (model: string, config: RuntimeConfig) => string;

/** One mount of the OpenAI-compatible API. */
export interface OpenAIMount {
  /** What the OpenAI paths go under: `/v1`, `''` for the bare paths, `/litellm`, ... */
  prefix: string;
  /** Recorded on the request context and in events. */
  dialect: string;
  /** Translates model names before the pipeline sees them; answers still echo the client's name. Identity when absent. */
  mapModel?: ModelNameMapper;
  /**
   * Takes off the parsed body, in place, the fields this mount's clients write for the gateway alone (LiteLLM's
   * `metadata`, `tags`, ...), before the fallbacks are read; returns the metadata the gateway is to read
   * (requestMetadata) though no upstream gets it, or null. Nothing is taken when absent.
   */
  takeGatewayFields?: (body: Record<string, unknown>) => Record<string, unknown> | null;
  /**
   * The headers the request's hints are to be read from when its body carries what headers would say (LiteLLM's
   * cache controls), or null; read before takeGatewayFields takes the fields off. The client's headers when absent.
   */
  hintHeaders?: (body: Record<string, unknown>, headers: Readonly<IncomingHttpHeaders>) => IncomingHttpHeaders | null;
  /** The virtual key a request presents, where this mount's clients send it elsewhere too; presentedCredential when absent. */
  credential?: (request: FastifyRequest) => string | null;
  /** Headers this mount's clients read on every answer (LiteLLM's `x-litellm-call-id`, ...); none when absent. */
  answerHeaders?: AnswerHeaders;
}

function mapped(mount: OpenAIMount, model: string, config: RuntimeConfig): string {
  return mount.mapModel ? mount.mapModel(model, config) : model;
}

/**
 * Registers the OpenAI handlers (chat completions, embeddings, models) under one prefix. Every mount runs the
 * same handlers and the same pipeline; a mount only chooses its prefix and how model names translate.
 */
export function registerOpenAIMount(app: FastifyInstance, deps: HttpDeps, mount: OpenAIMount): void {
  const { prefix, dialect } = mount;
  const credentialOf = mount.credential ?? presentedCredential;

  app.post(`${prefix}/chat/completions`, async (request, reply) => {
    const chat = parseChatCompletionRequest(request.body);
    const hintHeaders = mount.hintHeaders ? mount.hintHeaders(chat, request.headers) : null;
    const gatewayMetadata = mount.takeGatewayFields ? mount.takeGatewayFields(chat) : null;
    const requestFallbacks = takeRequestFallbacks(chat);
    const config = deps.config.current();
    const clientModel = chat.model;
    const model = mapped(mount, clientModel, config);
    const ctx = createRequestContext({
      dialect,
      path: request.url,
      config,
      request: model === clientModel ? chat : { ...chat, model },
      responseModel: clientModel,
      clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
      requestFallbacks: mount.mapModel ? requestFallbacks.map((name) => mapped(mount, name, config)) : requestFallbacks,
      gatewayMetadata,
      credential: credentialOf(request),
      fromRemote: isRemoteClient(request, config.settings),
      id: request.id,
      clientHeaders: request.headers,
      hintHeaders,
      exactNumbers: hasExactNumbers(request.body),
      // An OpenAI-format upstream's stream events reach the client as they came (but for the model name).
      verbatimFormat: 'openai',
    });
    // The answer is written to the raw response so chunks go out as they arrive, without framework buffering.
    reply.hijack();
    await respondOpenAI(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, mount.answerHeaders);
  });

  // Embeddings go through the same pipeline as chat: keys, limits, budgets, routing, retries, cost.
  app.post(`${prefix}/embeddings`, async (request, reply) => {
    const parsed = parseEmbeddingsRequest(request.body);
    const gatewayMetadata = mount.takeGatewayFields ? mount.takeGatewayFields(parsed) : null;
    // Embeddings are routed like chat, and so fall back to the models a request names as chat does.
    const requestFallbacks = takeRequestFallbacks(parsed);
    const config = deps.config.current();
    const model = mapped(mount, parsed.model, config);
    const embeddings = model === parsed.model ? parsed : { ...parsed, model };
    const ctx = createRequestContext({
      dialect,
      path: request.url,
      config,
      operation: 'embeddings',
      request: embeddings,
      responseModel: parsed.model,
      requestFallbacks: mount.mapModel ? requestFallbacks.map((name) => mapped(mount, name, config)) : requestFallbacks,
      gatewayMetadata,
      clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
      credential: credentialOf(request),
      fromRemote: isRemoteClient(request, config.settings),
      id: request.id,
      clientHeaders: request.headers,
      exactNumbers: hasExactNumbers(request.body),
      // An OpenAI-format upstream's answer reaches the client as it came (but for the model name): its vectors'
      // number spellings and the fields tollgate does not read, as for chat.
      verbatimFormat: 'openai',
    });
    reply.hijack();
    await respondOpenAI(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, mount.answerHeaders);
  });

  // `?provider=` and `?search=` narrow the list (tollgate's addition; OpenAI's own list takes no filters).
  const listGuard = modelListGuard(deps, credentialOf);
  app.get(`${prefix}/models`, { preHandler: listGuard }, async (request, reply) => {
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

  // A wildcard, not a parameter: `<provider>/<model>` ids hold a slash, sent as it is or URL-encoded (`%2F`).
  app.get(`${prefix}/models/*`, { preHandler: listGuard }, async (request, reply) => {
    const id = (request.params as { '*': string })['*'];
    const body = retrieveModel(mount, deps.config.current(), id, Math.floor(deps.startedAt / 1000));
    return reply.type('application/json; charset=utf-8').send(body);
  });
}

/**
 * The OpenAI-compatible API under `/v1`, and under the bare paths (`/chat/completions`, `/embeddings`,
 * `/models`) for clients whose base URL has no `/v1`.
 */
export function registerOpenAIRoutes(app: FastifyInstance, deps: HttpDeps): void {
  // A bare model name (`gpt-4o-mini`) becomes the one configured provider's `<provider>/<model>` before the
  // pipeline sees it, so key checks, budgets, routing rules and logs all see the name that is routed.
  const mapModel: ModelNameMapper = (model, config) => resolveModelName(config, model);
  registerOpenAIMount(app, deps, { prefix: '/v1', dialect: 'openai', mapModel });
  registerOpenAIMount(app, deps, { prefix: '', dialect: 'openai', mapModel });
}
