import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GovernanceStore } from '../../../governance/governance-store.js';
import { modelListGuard } from '../../../http/key-check.js';
import type { RuntimeConfig } from '../../../core/config.js';
import { findModelEntry, modelEntries, type ModelEntry } from '../../../catalog/model-list.js';
import { gatewayError } from '../../../core/errors.js';
import { bareModelError, isBareName, lookupBareModel } from '../../../routing/bare-model.js';
import { isRouteName } from '../../../routing/route-patterns.js';
import { canonicalGeminiModel } from '../model-name.js';

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 1000;

/**
 * What a model is called with, as Gemini's list says it: clients pick embedding models by `embedContent` in
 * `supportedGenerationMethods` (the SDK's `supportedActions`), chat models by `generateContent`. The catalogue
 * is a price list without a modality, but every embedding model in it says so in its id (`gemini-embedding-001`,
 * `text-embedding-3-small`, `embed-v4.0`, `mistral-embed`, `amazon.titan-embed-text-v1`).
 */
const EMBEDDING_METHODS = ['embedContent', 'batchEmbedContents', 'countTokens'];
const GENERATION_METHODS = ['generateContent', 'countTokens'];

/** Gemini's Model resource. Gemini models by their bare names (as the route accepts them), others as `<provider>/<model>`. */
function geminiModel(entry: ModelEntry): Record<string, unknown> {
  const id = entry.provider === 'gemini' ? entry.model : entry.id;
  return {
    name: `models/${id}`,
    baseModelId: id,
    displayName: entry.name ?? id,
    ...(entry.context_window ? { inputTokenLimit: entry.context_window } : {}),
    supportedGenerationMethods: /embed/i.test(entry.model) ? EMBEDDING_METHODS : GENERATION_METHODS,
  };
}

function pageSizeOf(raw: unknown): number {
  if (raw === undefined) return DEFAULT_PAGE_SIZE;
  const size = Number(raw);
  if (!Number.isInteger(size) || size < 1) {
    throw gatewayError('invalid_query', 'pageSize must be a positive integer.', { param: 'pageSize' });
  }
  return Math.min(size, MAX_PAGE_SIZE);
}

function models(config: RuntimeConfig): Record<string, unknown>[] {
  // Gemini's own models first: they are what this route's clients usually look for.
  const entries = modelEntries(config);
  return [...entries.filter((entry) => entry.provider === 'gemini'), ...entries.filter((entry) => entry.provider !== 'gemini')].map(geminiModel);
}

/**
 * `GET .../models/{id}` for a name the list does not hold as written: a name `generateContent` takes (a route, or a
 * bare name that one configured provider serves) answers as that model, under the name asked; a bare name several
 * providers serve is the 404 `generateContent` gets, naming each `<provider>/<model>`.
 */
function resolvedModel(config: RuntimeConfig, id: string): Record<string, unknown> {
  const name = canonicalGeminiModel(config, id);
  if (isRouteName(config.routes, name)) return { name: `models/${id}`, baseModelId: id, displayName: id, supportedGenerationMethods: GENERATION_METHODS };
  const entry = name === id ? undefined : findModelEntry(config, name);
  if (entry) return { ...geminiModel(entry), name: `models/${id}`, baseModelId: id };
  if (isBareName(config, name)) {
    const found = lookupBareModel(config, name);
    if (found.kind === 'several') throw bareModelError(config, name, found);
  }
  throw gatewayError('model_not_found', `models/${id} is not found.`);
}

/** `GET /genai/{version}/models` (`models.list()`, paged by an opaque `pageToken`) and `GET .../models/{id}`. */
export function registerGenAIModelRoutes(
  scope: FastifyInstance,
  deps: { config: { current(): RuntimeConfig }; governance: GovernanceStore },
  versions: RegExp,
  credentialOf: (request: FastifyRequest) => string | null,
): void {
  const listGuard = modelListGuard(deps, credentialOf);
  scope.get('/:version/models', { preHandler: listGuard }, async (request) => {
    const { version } = request.params as { version: string };
    if (!versions.test(version)) throw gatewayError('unknown_url', `Unknown API version '${version}'.`);
    const query = request.query as Record<string, unknown>;
    const size = pageSizeOf(query.pageSize);
    const offset = typeof query.pageToken === 'string' && /^\d+$/.test(query.pageToken) ? Number(query.pageToken) : 0;
    const all = models(deps.config.current());
    const page = all.slice(offset, offset + size);
    return { models: page, ...(offset + size < all.length ? { nextPageToken: String(offset + size) } : {}) };
  });

  scope.get('/:version/models/*', { preHandler: listGuard }, async (request) => {
    const id = (request.params as { '*': string })['*'];
    const config = deps.config.current();
    return models(config).find((model) => model.baseModelId === id || model.name === `models/${id}`) ?? resolvedModel(config, id);
  });
}
