import type { RuntimeConfig } from '../../config/runtime.js';
import { RouteMatcher } from '../../routing/route-patterns.js';
import { splitModelName } from '../../routing/resolve-target.js';

/** Route matchers per config version: a config is immutable, so one compile serves all its requests. */
const matchers = new WeakMap<RuntimeConfig, RouteMatcher>();

function matcherFor(config: RuntimeConfig): RouteMatcher {
  let matcher = matchers.get(config);
  if (!matcher) {
    matcher = new RouteMatcher(config.routes);
    matchers.set(config, matcher);
  }
  return matcher;
}

/** Whether a configured route (its exact name or a `*` pattern) serves this name. */
export function isRouteName(config: RuntimeConfig, name: string): boolean {
  return matcherFor(config).match(name) !== null;
}

/**
 * The model name the pipeline routes on. Anthropic SDK clients send bare Anthropic names (`claude-sonnet-4-5`),
 * which mean the `anthropic` provider; a `<provider>/<model>` name or a configured route (exact or pattern)
 * is taken as it is, so an Anthropic-format client can reach any model.
 */
export function canonicalModelName(config: RuntimeConfig, requested: string): string {
  const name = requested.trim();
  if (name.includes('/') || isRouteName(config, name)) return name;
  return `anthropic/${name}`;
}

/** Wire formats that read Anthropic's own request fields (`thinking`, `cache_control`) off the canonical request. */
const ANTHROPIC_AWARE = new Set(['anthropic', 'vertex']);

/**
 * Whether Anthropic-only fields may stay on the canonical request for this model. They must go when the model is
 * a direct name of a provider that forwards unknown fields verbatim (OpenAI's format: its API refuses them); a
 * route may reach Anthropic, so its requests keep them.
 */
export function keepsAnthropicFields(config: RuntimeConfig, canonicalName: string): boolean {
  if (isRouteName(config, canonicalName)) return true;
  const parts = splitModelName(canonicalName);
  const provider = parts ? config.providers.get(parts.provider) : undefined;
  return provider === undefined || ANTHROPIC_AWARE.has(provider.vendor.format);
}
