import type { RoutingRuleConfig } from '../core/config.js';
import type { RuntimeConfig } from '../core/config.js';
import { isBareName, lookupBareModel, resolveModelName } from '../routing/bare-model.js';
import { expandTarget, routeMatcherFor } from '../routing/route-patterns.js';
import { ruleMatches, type RuleFacts } from '../routing/routing-rules.js';
import { modelAllowed } from '../routing/model-patterns.js';

/**
 * A key's `models` list against what a request can really reach. A name the list allows (a `<provider>/<model>`,
 * a route's name, or a `*` pattern matching either) is allowed with all it leads to: listing a route allows the
 * route. A route the list does not name is allowed when every target and every fallback it can reach is. The
 * request's own `fallbacks`, and the destination of every routing rule that may apply, are checked the same
 * way, because the route stage runs after auth and may send the request there.
 */

/** One place a name leads to, expanded the way the call stage expands it (candidate-groups.ts). */
interface Reach {
  /** The route name or `<provider>/<model>` a key's list is matched against. */
  name: string;
  /** For a route: its targets, then its fallbacks (routes among them expanded in turn, cycles cut). */
  children: Reach[] | null;
}

/** What a key's list does not allow: the name asked for, and the place it can reach that is not allowed. */
export interface ModelRefusal {
  /** `model` or `fallbacks[i]`: the request field that leads there. */
  param: string;
  /** The name the client asked for (a model, a route or a fallback). */
  requested: string;
  /** Whether `requested` is a route. */
  route: boolean;
  /** What is not allowed: `requested` itself, or a target or fallback it reaches. */
  reaches: string;
  /** Set when a routing rule would send the request to `requested`. */
  rule: string | null;
}

/** Per config version: what each requested name reaches, what each request fallback reaches, which rules may apply. */
interface ConfigReach {
  models: Map<string, Reach>;
  fallbacks: Map<string, Reach>;
  rules: Map<string, ReadonlyArray<{ rule: RoutingRuleConfig; name: string }>>;
}

const byConfig = new WeakMap<RuntimeConfig, ConfigReach>();
const MAX_CACHED_NAMES = 1_000;

function reachOf(config: RuntimeConfig): ConfigReach {
  let reach = byConfig.get(config);
  if (!reach) {
    reach = { models: new Map(), fallbacks: new Map(), rules: new Map() };
    byConfig.set(config, reach);
  }
  return reach;
}

function cached<T>(map: Map<string, T>, name: string, compute: () => T): T {
  let value = map.get(name);
  if (value === undefined) {
    value = compute();
    if (map.size >= MAX_CACHED_NAMES) map.clear();
    map.set(name, value);
  }
  return value;
}

/** A route target as resolveCandidates reads it: a bare name means the one configured provider serving it. */
function targetName(config: RuntimeConfig, name: string): string {
  if (!isBareName(config, name)) return name;
  const found = lookupBareModel(config, name);
  return found.kind === 'one' ? found.name : name;
}

/** A route's targets and fallback chain; nested routes are found by exact name and share the wildcard, as in the call stage. */
function expandRoute(config: RuntimeConfig, routeName: string, wildcard: string, seen: Set<string>): Reach {
  const route = config.routes.get(routeName);
  const children: Reach[] = [];
  if (route) {
    for (const target of route.targets) children.push({ name: targetName(config, expandTarget(target.model, wildcard)), children: null });
    expandFallbacks(config, route.fallbacks, wildcard, seen, children);
  }
  return { name: routeName, children };
}

function expandFallbacks(config: RuntimeConfig, names: readonly string[], wildcard: string, seen: Set<string>, out: Reach[]): void {
  for (const raw of names) {
    const name = resolveModelName(config, expandTarget(raw, wildcard));
    if (seen.has(name)) continue;
    seen.add(name);
    out.push(config.routes.has(name) ? expandRoute(config, name, wildcard, seen) : { name, children: null });
  }
}

/** What a requested model (or a rule's `route_to`) reaches: the route it matches (exact or pattern), or itself. */
function modelReach(config: RuntimeConfig, model: string): Reach {
  return cached(reachOf(config).models, model, () => {
    const match = routeMatcherFor(config.routes).match(model);
    if (!match) return { name: model, children: null };
    const seen = new Set([match.route.name]);
    const children: Reach[] = [];
    for (const target of match.route.targets) children.push({ name: targetName(config, expandTarget(target.model, match.wildcard)), children: null });
    expandFallbacks(config, match.route.fallbacks, match.wildcard, seen, children);
    // Matched by the name the client wrote: that name is what the key's list is read against.
    return { name: model, children };
  });
}

/** What one of the request's own `fallbacks` reaches, resolved as the call stage resolves it. */
function fallbackReach(config: RuntimeConfig, raw: string): Reach {
  return cached(reachOf(config).fallbacks, raw, () => {
    const name = resolveModelName(config, raw);
    return config.routes.has(name) ? expandRoute(config, name, '', new Set([name])) : { name, children: null };
  });
}

/** The first place under `reach` the list does not allow, or null when it allows it all. */
function firstRefused(patterns: readonly string[], reach: Reach): string | null {
  if (modelAllowed(patterns, reach.name)) return null;
  if (reach.children === null) return reach.name;
  for (const child of reach.children) {
    const refused = firstRefused(patterns, child);
    if (refused !== null) return refused;
  }
  return null;
}

/** Rules whose `when.model` takes this model (or that name no model), in order; computed once per config and model. */
function rulesFor(config: RuntimeConfig, model: string): ReadonlyArray<{ rule: RoutingRuleConfig; name: string }> {
  if (config.routingRules.length === 0) return [];
  return cached(reachOf(config).rules, model, () =>
    config.routingRules.flatMap((rule, i) => {
      const wanted = rule.when.model === undefined ? null : Array.isArray(rule.when.model) ? rule.when.model : [rule.when.model];
      if (rule.route_to === model || (wanted && !modelAllowed(wanted, model))) return [];
      return [{ rule, name: rule.name ?? `rule-${i}` }];
    }),
  );
}

/** Conditions only known when the route stage runs (usage, load, token count). */
function dependsOnUsage(rule: RoutingRuleConfig): boolean {
  const when = rule.when;
  return (
    when.estimated_tokens_gte !== undefined ||
    when.estimated_tokens_lt !== undefined ||
    when.key_budget_used_pct_gte !== undefined ||
    when.team_budget_used_pct_gte !== undefined ||
    when.target_rps_gte !== undefined
  );
}

/** What auth knows of the request for routing rules: who asks, with which metadata. */
export interface RuleSubject {
  operation: 'chat' | 'embeddings';
  key: { id: string; name: string; metadata: Record<string, unknown> };
  team: () => { id: string; name: string } | null;
  metadata: Record<string, unknown> | null;
}

/**
 * Whether a rule may apply to this request: its request-known conditions (model, key, team, metadata) are
 * checked exactly; those known only later (budget used, load, token count) are taken as holding, so a rule
 * that may send the request somewhere counts.
 */
function mayApply(rule: RoutingRuleConfig, model: string, subject: RuleSubject): boolean {
  const team = rule.when.team !== undefined || rule.when.team_budget_used_pct_gte !== undefined ? subject.team() : null;
  const facts: RuleFacts = {
    operation: subject.operation,
    model,
    key: subject.key,
    team,
    metadata: subject.metadata,
    estimatedTokens: () => rule.when.estimated_tokens_gte ?? 0,
    keyBudgetUsedPct: () => Number.POSITIVE_INFINITY,
    teamBudgetUsedPct: () => (team ? Number.POSITIVE_INFINITY : null),
    targetRps: () => Number.POSITIVE_INFINITY,
  };
  return ruleMatches(rule, facts);
}

/**
 * Checks a key's `models` against everything the request can reach in this config version: the requested
 * model or route, the request's fallbacks, and where a routing rule that may apply would send it. Returns the
 * first thing not allowed, or null. An empty list allows everything; a name the list allows with no fallbacks
 * and no rules costs what a plain list check costs.
 */
export function refusedModel(
  config: RuntimeConfig,
  patterns: readonly string[],
  model: string,
  fallbacks: readonly string[],
  subject: RuleSubject,
): ModelRefusal | null {
  if (patterns.length === 0) return null;
  const check = (reach: Reach, param: string, rule: string | null): ModelRefusal | null => {
    const refused = firstRefused(patterns, reach);
    return refused === null ? null : { param, requested: reach.name, route: reach.children !== null, reaches: refused, rule };
  };
  if (!modelAllowed(patterns, model)) {
    const refusal = check(modelReach(config, model), 'model', null);
    if (refusal) return refusal;
  }
  for (const [i, raw] of fallbacks.entries()) {
    const refusal = check(fallbackReach(config, raw), `fallbacks[${i}]`, null);
    if (refusal) return refusal;
  }
  for (const { rule, name } of rulesFor(config, model)) {
    if (!mayApply(rule, model, subject)) continue;
    const refusal = check(modelReach(config, rule.route_to), 'model', name);
    if (refusal) return refusal;
    // The first rule that surely applies is the last one that can: the route stage stops there.
    if (!dependsOnUsage(rule)) break;
  }
  return null;
}
