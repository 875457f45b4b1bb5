import type { RuntimeConfig } from '../../core/config.js';
import { splitModelName } from '../../routing/resolve-target.js';
import { resolveModelName } from '../../routing/bare-model.js';
import { isRouteName } from '../../routing/route-patterns.js';

/** The model name the pipeline routes on: a bare name is Anthropic's when Anthropic serves it (see resolveModelName). */
export function canonicalModelName(config: RuntimeConfig, requested: string): string {
  return resolveModelName(config, requested, 'anthropic');
}

/** Wire formats that read Anthropic's own request fields (`thinking`, `cache_control`) off the canonical request. */
const ANTHROPIC_AWARE = new Set(['anthropic', 'vertex']);

function takesAnthropicFields(config: RuntimeConfig, name: string): boolean {
  if (isRouteName(config.routes, name)) return true;
  const parts = splitModelName(name);
  const provider = parts ? config.providers.get(parts.provider) : undefined;
  return provider === undefined || ANTHROPIC_AWARE.has(provider.vendor.format);
}

/**
 * Whether Anthropic-only fields may stay on the canonical request for this model and the request's own
 * fallbacks. They must go when one is a direct name of a provider that forwards unknown fields verbatim (OpenAI's
 * format: its API refuses them); a route may reach Anthropic, so its requests keep them. An Anthropic upstream
 * never reads them off the canonical request (it gets the client's own body); Vertex AI's Claude does.
 */
export function keepsAnthropicFields(config: RuntimeConfig, canonicalName: string, fallbacks: readonly string[] = []): boolean {
  if (!takesAnthropicFields(config, canonicalName)) return false;
  return fallbacks.every((name) => takesAnthropicFields(config, canonicalModelName(config, name)));
}
