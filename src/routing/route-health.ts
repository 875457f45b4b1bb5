import { routingPolicyView } from '../config/present.js';
import type { RuntimeConfig } from '../core/config.js';
import { effectiveWeights, someUnpaused } from './attempt-plan.js';
import { buildCandidateGroups } from './candidate-groups.js';
import { type CandidateGroup } from '../core/plan.js';
import type { HealthRegistry } from './health-registry.js';
import { GatewayError } from '../core/errors.js';
import { resolveCandidates, splitModelName } from './resolve-target.js';
import { expandTarget, routeMatcherFor, type RouteMatch } from './route-patterns.js';

const round = (value: number, places = 4): number => Number(value.toFixed(places));
const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());

/** A target or fallback that the request path skips because it cannot be served (no key, say). */
export interface UnavailableTarget {
  target: string;
  role: 'primary' | 'fallback';
  /** The route whose targets or fallbacks name it. */
  via: string;
  code: string;
  reason: string;
}

/**
 * Walks the same chain as the candidate groups (the route's targets, then its fallbacks, following fallback
 * routes, cycles cut) and keeps what cannot be served: the request path skips those silently, this view shows them.
 */
function unavailableTargets(config: RuntimeConfig, name: string, match: RouteMatch | null): UnavailableTarget[] {
  const out: UnavailableTarget[] = [];
  const tryModel = (name: string, role: UnavailableTarget['role'], via: string): void => {
    try {
      resolveCandidates(config, name, null);
    } catch (err) {
      const error = err instanceof GatewayError ? err : null;
      out.push({ target: name, role, via, code: error?.code ?? 'unavailable', reason: error?.message ?? String(err) });
    }
  };
  if (!match) {
    tryModel(name, 'primary', name);
    return out;
  }
  const seen = new Set<string>([match.route.name]);
  for (const target of match.route.targets) tryModel(expandTarget(target.model, match.wildcard), 'primary', match.route.name);
  const follow = (names: readonly string[], via: string): void => {
    for (const raw of names) {
      const name = expandTarget(raw, match.wildcard);
      if (seen.has(name)) continue;
      seen.add(name);
      const route = config.routes.get(name);
      if (!route) {
        tryModel(name, 'fallback', via);
        continue;
      }
      for (const target of route.targets) tryModel(expandTarget(target.model, match.wildcard), 'fallback', route.name);
      follow(route.fallbacks, route.name);
    }
  };
  follow(match.route.fallbacks, match.route.name);
  return out;
}

/**
 * What routing knows right now about a route (or a `<provider>/<model>`, or a concrete model a pattern route
 * matches): each target's configured and effective weight, its share of new traffic, breaker and health.
 * Null when the name is neither a route nor a model of a known provider.
 */
export function routeHealthView(config: RuntimeConfig, name: string, registry: HealthRegistry, now: number = Date.now()): Record<string, unknown> | null {
  const match = routeMatcherFor(config.routes).match(name);
  const parts = splitModelName(name);
  if (!match && !(parts && config.providers.has(parts.provider))) return null;
  const policy = match?.route.policy ?? config.settings.routing;
  let groups: CandidateGroup[];
  try {
    groups = buildCandidateGroups(config, name, match, null);
  } catch {
    // Nothing of the primary choice can be served: `unavailable` says why.
    groups = [];
  }
  // The plan passes over paused targets while any target of any group can take the call unpaused.
  const unpaused = someUnpaused(groups, policy, registry, now);
  return {
    name,
    route: match?.route.name ?? null,
    policy: routingPolicyView(policy),
    // Targets and fallbacks skipped because they cannot be served (a provider with no key, say).
    unavailable: unavailableTargets(config, name, match),
    groups: groups.map((group, index) => {
      const weights = effectiveWeights(group, policy, registry, now, unpaused);
      const total = weights.reduce((sum, weight) => sum + weight, 0);
      return {
        name: group.name,
        role: index === 0 ? 'primary' : 'fallback',
        targets: group.candidates.map((candidate, i) => {
          const health = registry.get(candidate);
          const snapshot = health.snapshot(now);
          const breaker = health.breakerPolicyState(now, policy.breaker);
          const effective = weights[i] ?? 0;
          return {
            target: candidate.label,
            provider: candidate.target.provider.name,
            model: candidate.target.model,
            key_id: candidate.target.keyId,
            configured_weight: round(candidate.weight),
            effective_weight: round(effective),
            share: total > 0 ? round(effective / total) : 0,
            breaker: {
              state: breaker.state,
              reason: breaker.reason,
              consecutive_failures: breaker.consecutiveFailures,
              failure_rate: round(breaker.failureRate),
              window_calls: breaker.windowCalls,
              half_opens_at: iso(breaker.halfOpensAt),
            },
            health: {
              success_rate: round(snapshot.successRate),
              latency_ms: snapshot.latencyMs === null ? null : round(snapshot.latencyMs, 1),
              recent_rate_limits: round(snapshot.recentRateLimits, 2),
              rate_limited_until: iso(snapshot.rateLimitedUntil),
              rate_limit_remaining: snapshot.rateLimitRemaining === null ? null : round(snapshot.rateLimitRemaining),
              rps: round(snapshot.rps, 2),
              calls: snapshot.calls,
              failures: snapshot.failures,
              in_flight: snapshot.inFlight,
              last_error: snapshot.lastError,
            },
          };
        }),
      };
    }),
  };
}
