import type { CandidateGroup } from '../core/plan.js';
import type { RuntimeConfig } from '../core/config.js';
import { quoteInput } from '../core/quote-input.js';
import { isBareName, lookupBareModel, resolveModelName } from './bare-model.js';
import { resolveCandidates } from './resolve-target.js';
import { type Candidate } from '../core/plan.js';
import { expandTarget, type RouteMatch, type RouteMatcher } from './route-patterns.js';
import { gatewayError } from '../core/errors.js';


/** A direct name's group, named by the `<provider>/<model>` it resolved to (a bare name's provider shows). */
function groupOfModel(config: RuntimeConfig, model: string, clientKey: string | null): CandidateGroup {
  const candidates = resolveCandidates(config, model, clientKey);
  return { name: candidates[0]?.label ?? model, candidates };
}

/**
 * A route's targets as one group. Targets that cannot be served right now (no key configured, say) are left
 * out; only when none is left does the first reason come back.
 */
function groupOfRoute(config: RuntimeConfig, match: RouteMatch, clientKey: string | null): CandidateGroup {
  const candidates: Candidate[] = [];
  let firstError: unknown = null;
  for (const target of match.route.targets) {
    try {
      candidates.push(...resolveCandidates(config, expandTarget(target.model, match.wildcard), clientKey, target.weight));
    } catch (err) {
      firstError ??= err;
    }
  }
  if (candidates.length === 0) throw firstError ?? gatewayError('internal_error', `Route '${match.route.name}' has no targets.`);
  return { name: match.route.name, candidates };
}

/**
 * Expands fallbacks (route names, `<provider>/<model>` or bare names) into groups, following chained routes' own
 * fallbacks; cycles are cut. A fallback that cannot be served right now is skipped rather than failing a
 * request whose first choice may well succeed.
 */
function fallbackGroups(config: RuntimeConfig, names: readonly string[], wildcard: string, clientKey: string | null, seen: Set<string>, out: CandidateGroup[]): void {
  for (const raw of names) {
    // A bare fallback counts as the model it resolves to, so naming a model both ways calls it once.
    const name = resolveModelName(config, expandTarget(raw, wildcard));
    if (seen.has(name)) continue;
    seen.add(name);
    const route = config.routes.get(name);
    try {
      out.push(route ? groupOfRoute(config, { route, wildcard }, clientKey) : groupOfModel(config, name, clientKey));
    } catch {
      continue;
    }
    if (route) fallbackGroups(config, route.fallbacks, wildcard, clientKey, seen, out);
  }
}

/**
 * Fallbacks a request names must be routes, models of known providers, or bare names that one configured
 * provider serves: a typo is the client's to fix, and better told at once than found out when the first
 * choice fails.
 */
export function checkRequestFallbacks(config: RuntimeConfig, matcher: RouteMatcher | null, fallbacks: readonly string[]): void {
  for (const [i, name] of fallbacks.entries()) {
    if (matcher ? matcher.match(name) : config.routes.has(name)) continue;
    if (!isBareName(config, name)) continue;
    const found = lookupBareModel(config, name);
    if (found.kind === 'one') continue;
    const why = found.kind === 'several'
      ? `is served by more than one configured provider (${found.names.join(', ')}); name one as '<provider>/<model>'`
      : "is neither a route, nor '<provider>/<model>' with a known provider, nor a model one configured provider serves";
    throw gatewayError('invalid_fallback', `Invalid 'fallbacks[${i}]': '${quoteInput(name)}' ${why}.`, { param: `fallbacks[${i}]` });
  }
}

/** Groups depend only on the config version and the model name (when the request brings no key or fallbacks). */
const cache = new WeakMap<RuntimeConfig, Map<string, CandidateGroup[]>>();
const MAX_CACHED_MODELS = 1_000;

/**
 * Builds a request's candidate groups from its route (or direct model name) and any fallbacks it asked for.
 * The common case (no client key, no request fallbacks) is computed once per config version and model.
 */
export function buildCandidateGroups(
  config: RuntimeConfig,
  model: string,
  match: RouteMatch | null,
  clientKey: string | null,
  requestFallbacks: readonly string[] = [],
): CandidateGroup[] {
  if (clientKey !== null || requestFallbacks.length > 0) return computeCandidateGroups(config, model, match, clientKey, requestFallbacks);
  let byModel = cache.get(config);
  if (!byModel) {
    byModel = new Map();
    cache.set(config, byModel);
  }
  let groups = byModel.get(model);
  if (!groups) {
    groups = computeCandidateGroups(config, model, match, null, []);
    if (byModel.size >= MAX_CACHED_MODELS) byModel.clear();
    byModel.set(model, groups);
  }
  return groups;
}

function computeCandidateGroups(
  config: RuntimeConfig,
  model: string,
  match: RouteMatch | null,
  clientKey: string | null,
  requestFallbacks: readonly string[] = [],
): CandidateGroup[] {
  const groups: CandidateGroup[] = [];
  const seen = new Set<string>([match ? match.route.name : resolveModelName(config, model)]);
  if (match) {
    groups.push(groupOfRoute(config, match, clientKey));
    fallbackGroups(config, match.route.fallbacks, match.wildcard, clientKey, seen, groups);
  } else {
    groups.push(groupOfModel(config, model, clientKey));
  }
  fallbackGroups(config, requestFallbacks, '', clientKey, seen, groups);
  return clientKey === null ? groups : oneServiceForClientKey(groups);
}

/** The service a provider stands for: its vendor at its address (two `type: openai` providers may be two servers). */
function serviceOf(candidate: Candidate): string {
  const { provider } = candidate.target;
  return `${provider.vendor.id} ${provider.baseUrl}?${provider.baseQuery ?? ''}`;
}

/**
 * A key a client brings (`x-tollgate-provider-key`) is one vendor's key: it goes only to the service of the first
 * candidate in the plan it would serve (the provider the request names, or its route's first keyless target).
 * Other keyless providers of the plan (a fallback to another vendor, a route mixing vendors) are left out as if no
 * key had come, rather than be sent the client's key: an OpenAI key must not reach Anthropic, nor an operator's
 * other server. A group left empty is dropped, as a fallback that cannot be served is.
 */
function oneServiceForClientKey(groups: CandidateGroup[]): CandidateGroup[] {
  let service: string | null = null;
  for (const group of groups) {
    for (const candidate of group.candidates) {
      if (candidate.target.keySource === 'client') {
        service = serviceOf(candidate);
        break;
      }
    }
    if (service !== null) break;
  }
  if (service === null) return groups;
  const kept: CandidateGroup[] = [];
  for (const group of groups) {
    const candidates = group.candidates.filter((candidate) => candidate.target.keySource !== 'client' || serviceOf(candidate) === service);
    if (candidates.length > 0) kept.push(candidates.length === group.candidates.length ? group : { ...group, candidates });
  }
  return kept;
}
