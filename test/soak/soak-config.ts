// The config a soak runs with: everything on at once (cache with its semantic tier, guardrails on both sides,
// metrics, request logs), and the variants the config churn switches between.
import type { ConfigInput } from '../../src/config/schema.js';

/** What the soak's input guardrail blocks: a request carrying it gets 400, deliberately. */
export const BLOCKED_MARKER = 'SOAK-BLOCK-7';

/**
 * The config file's document. `variant` changes a few harmless fields (a cache TTL, a route's weights, one extra
 * guardrail rule) so that every save is a real change: a new config version, a pipeline compiled for it and the
 * previous one retired, which is where a slow leak would come from.
 */
export function soakConfig(upstreamUrl: string, variant: number): ConfigInput {
  return {
    providers: { openai: { base_url: `${upstreamUrl}/v1`, api_key: 'sk-soak' } },
    settings: { log_level: 'warn', metrics: { enabled: true } },
    cache: {
      mode: 'on',
      ttl_seconds: 600 + variant,
      // Small enough that a long soak fills it and the eviction path runs too.
      max_entries: 2_000,
      semantic: { enabled: true },
    },
    guardrails: {
      rules: [
        { name: 'soak-block', kind: 'regex', patterns: ['SOAK-BLOCK-[0-9]+'], action: 'block' },
        { name: 'emails', kind: 'email', action: 'redact', applies_to: 'output' },
        ...(variant % 2 === 1 ? [{ name: 'churn-keyword', kind: 'keyword' as const, keywords: ['churn-word-never-sent'], action: 'flag' as const }] : []),
      ],
    },
    routes: {
      'soak-route': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 + (variant % 3) }] },
    },
  };
}

/** The API layer's share of a churn step (PATCH /api/config): another route weight and cache TTL. */
export function soakApiPatch(variant: number): Record<string, unknown> {
  return {
    cache: { ttl_seconds: 900 + variant },
    routes: { 'soak-api-route': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 + (variant % 5) }] } },
  };
}
