import type { GatewayError } from '../core/errors.js';
import type { AttemptPlan } from './attempt-plan.js';
import type { HealthRegistry } from './health-registry.js';
import { gatewayError } from '../core/errors.js';

/**
 * The error a request ends with when its plan has nothing more to try. Every breaker open: 503 naming the
 * targets and when the first one takes a trial call again (as retry-after). Otherwise the last upstream error,
 * unchanged.
 */
export function plannedFailure(plan: AttemptPlan, lastError: GatewayError | null, registry: HealthRegistry, now: number = Date.now()): GatewayError {
  // The last upstream error as the provider wrote it; how many attempts it took is the x-tollgate-attempts header.
  if (lastError) return lastError;
  const candidates = plan.groups.flatMap((group) => group.candidates);
  const names = [...new Set(candidates.map((candidate) => candidate.label))].join(', ');
  let soonest: number | null = null;
  for (const candidate of candidates) {
    const health = registry.get(candidate);
    const at = health.breaker.halfOpensAt(plan.policy.breaker) ?? health.pausedUntil(now);
    if (at !== null && (soonest === null || at < soonest)) soonest = at;
  }
  const waitSeconds = soonest === null ? 1 : Math.max(1, Math.ceil((soonest - now) / 1000));
  const why =
    plan.exhausted === 'all-open'
      ? `every target's circuit breaker is open after repeated upstream failures (${names})`
      : `every target is paused by upstream rate limits beyond the request's deadline (${names})`;
  return gatewayError(plan.exhausted === 'all-open' ? 'all_targets_unavailable' : 'all_targets_rate_limited', `No upstream can take this request right now: ${why}. Try again in ${waitSeconds} s.`, {
    headers: { 'retry-after': String(waitSeconds) },
  });
}
