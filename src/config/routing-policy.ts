import type { RoutingPolicyConfig } from '../core/config.js';
import type { RoutingPolicy } from '../core/config.js';

export const DEFAULT_ROUTING_POLICY: RoutingPolicy = {
  retry: { maxAttempts: null, initialDelayMs: 100, maxDelayMs: 5_000, deadlineMs: 60_000 },
  breaker: { enabled: true, consecutiveFailures: 5, failureRate: 0.5, windowMs: 30_000, minRequests: 10, cooldownMs: 30_000, halfOpenRequests: 1 },
  adaptive: true,
  fallbackOnClientErrors: false,
};

/** Merges policy documents field by field; the first layer that sets a field wins, then the base. */
export function resolveRoutingPolicy(base: RoutingPolicy, ...layers: Array<RoutingPolicyConfig | undefined>): RoutingPolicy {
  const pick = <T>(read: (layer: RoutingPolicyConfig) => T | undefined, fallback: T): T => {
    for (const layer of layers) {
      const value = layer ? read(layer) : undefined;
      if (value !== undefined) return value;
    }
    return fallback;
  };
  const { retry, breaker } = base;
  return {
    retry: {
      maxAttempts: pick((l) => l.retry?.max_attempts, retry.maxAttempts),
      initialDelayMs: pick((l) => l.retry?.initial_delay_ms, retry.initialDelayMs),
      maxDelayMs: pick((l) => l.retry?.max_delay_ms, retry.maxDelayMs),
      deadlineMs: pick((l) => l.retry?.deadline_ms, retry.deadlineMs),
    },
    breaker: {
      enabled: pick((l) => l.breaker?.enabled, breaker.enabled),
      consecutiveFailures: pick((l) => l.breaker?.consecutive_failures, breaker.consecutiveFailures),
      failureRate: pick((l) => l.breaker?.failure_rate, breaker.failureRate),
      windowMs: pick((l) => l.breaker?.window_ms, breaker.windowMs),
      minRequests: pick((l) => l.breaker?.min_requests, breaker.minRequests),
      cooldownMs: pick((l) => l.breaker?.cooldown_ms, breaker.cooldownMs),
      halfOpenRequests: pick((l) => l.breaker?.half_open_requests, breaker.halfOpenRequests),
    },
    adaptive: pick((l) => l.adaptive, base.adaptive),
    fallbackOnClientErrors: pick((l) => l.fallback_on_client_errors, base.fallbackOnClientErrors),
  };
}
