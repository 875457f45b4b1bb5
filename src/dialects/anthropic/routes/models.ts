import type { FastifyInstance } from 'fastify';
import type { RuntimeConfig } from '../../../core/config.js';
import { modelEntries } from '../../../catalog/model-list.js';
import type { HttpDeps } from '../../../http/deps.js';
import { modelListGuard } from '../../../http/key-check.js';
import { presentedCredential } from './headers.js';
import { gatewayError, type GatewayError } from '../../../core/errors.js';
import { bareModelError, isBareName, lookupBareModel } from '../../../routing/bare-model.js';
import { isRouteName } from '../../../routing/route-patterns.js';
import { canonicalModelName } from '../model-name.js';

interface AnthropicModel {
  type: 'model';
  id: string;
  display_name: string;
  created_at: string;
}

const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 1000;

/** Anthropic's own models by their bare names (as this route accepts them), every other one as `<provider>/<model>`. */
function anthropicModels(config: RuntimeConfig, createdAt: string): AnthropicModel[] {
  // Anthropic's own models first: they are what this route's clients usually look for.
  const entries = modelEntries(config);
  const ordered = [...entries.filter((entry) => entry.provider === 'anthropic'), ...entries.filter((entry) => entry.provider !== 'anthropic')];
  return ordered.map((entry) => {
    const id = entry.provider === 'anthropic' ? entry.model : entry.id;
    return { type: 'model', id, display_name: entry.name ?? id, created_at: createdAt };
  });
}

function limitOf(raw: unknown): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw gatewayError('invalid_query', `limit: Input should be between 1 and ${MAX_LIMIT}`, { param: 'limit' });
  }
  return limit;
}

/**
 * Where the model a cursor names sits in the list. A cursor naming no model (a typo, or a model the configuration
 * no longer lists) is a 400 `invalid_request_error`: Anthropic documents no other answer for it, and restarting at
 * the first model (`after_id`) or answering an empty page (`before_id`) would let a paging client go round in
 * circles or take the list for ended.
 */
function cursorIndex(all: AnthropicModel[], param: 'after_id' | 'before_id', id: string): number {
  const index = all.findIndex((model) => model.id === id);
  if (index < 0) throw gatewayError('invalid_query', `${param}: no model has the id '${id}'`, { param });
  return index;
}

/** `GET /v1/models` and `/v1/models/{id}` in Anthropic's list shape, cursor-paged by `after_id` / `before_id`. */
export function registerAnthropicModelRoutes(scope: FastifyInstance, deps: HttpDeps): void {
  const createdAt = new Date(deps.startedAt).toISOString();
  const listGuard = modelListGuard(deps, presentedCredential);
  scope.get('/v1/models', { preHandler: listGuard }, async (request) => {
    const query = request.query as Record<string, unknown>;
    const limit = limitOf(query.limit);
    const all = anthropicModels(deps.config.current(), createdAt);
    let start = 0;
    let end = all.length;
    if (typeof query.after_id === 'string') start = cursorIndex(all, 'after_id', query.after_id) + 1;
    const backwards = typeof query.before_id === 'string';
    if (typeof query.before_id === 'string') {
      end = cursorIndex(all, 'before_id', query.before_id);
      start = Math.max(0, end - limit);
    }
    const data = all.slice(start, Math.min(end, start + limit));
    // `has_more` is about the direction paged in: paging back from `before_id`, whether models come before this
    // page (the SDK then asks again with `before_id: first_id`, and stops at the first `false`).
    const hasMore = backwards ? start > 0 : start + data.length < end;
    return { data, has_more: hasMore, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  });

  scope.get('/v1/models/*', { preHandler: listGuard }, async (request) => {
    const id = (request.params as { '*': string })['*'];
    const config = deps.config.current();
    const all = anthropicModels(config, createdAt);
    const found = all.find((model) => model.id === id);
    if (found) return found;
    // The name as a message would take it (a bare name another configured provider alone serves, a route), under the
    // name asked for; an ambiguous bare name gets the error a message gets.
    const routed = canonicalModelName(config, id);
    if (isRouteName(config.routes, routed)) return { type: 'model', id, display_name: id, created_at: createdAt };
    const entry = all.find((model) => model.id === routed);
    if (entry) return { ...entry, id };
    throw unservedModel(config, id);
  });
}

/** Why a model cannot be retrieved: an ambiguous bare name says so (and names the choices), as a message would. */
function unservedModel(config: RuntimeConfig, id: string): GatewayError {
  if (isBareName(config, id)) {
    const found = lookupBareModel(config, id);
    if (found.kind === 'several') return bareModelError(config, id, found);
  }
  return gatewayError('model_not_found', `model: ${id}`);
}
