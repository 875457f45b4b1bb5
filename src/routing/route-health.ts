import { routingPolicyView } from '../config/present.js';
import type { RuntimeConfig } from '../config/runtime.js';
import { effectiveWeights } from './attempt-plan.js';
import { buildCandidateGroups } from './candidate-groups.js';
import type { HealthRegistry } from './health-registry.js';
import { splitModelName } from './resolve-target.js';
import { routeMatcherFor } from './route-patterns.js';

const round = (value: number, places = 4): number => Number(value.toFixed(places));
const iso = (at: number | null): string | null => (at === null ? null : new Date(at).toISOString());

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
  const groups = buildCandidateGroups(config, name, match, null);
  return {
    name,
    route: match?.route.name ?? null,
    policy: routingPolicyView(policy),
    groups: groups.map((group, index) => {
      const weights = effectiveWeights(group, policy, registry, now);
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
