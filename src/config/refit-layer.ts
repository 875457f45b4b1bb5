import type { RuntimeConfig } from '../core/config.js';
import { resolveRuntimeConfig, type ConfigLayers } from './runtime.js';
import type { ConfigDocument } from './schema.js';
import { ConfigError, type Env } from './secret-ref.js';

/** Sections the API layer holds whole (they replace the file's): one that fails is left out as a whole. */
const WHOLE_SECTIONS = ['routing_rules', 'plugins', 'alerts', 'mcp', 'guardrails', 'cache'] as const;

/** Whether a ConfigError's message is about `field` (`routes.chat: ...`, `routes.chat.targets.0.model: ...`). */
function names(message: string, field: string): boolean {
  return message.startsWith(field) && /^[.:[]/.test(message.slice(field.length));
}

/** The part of the API layer a resolution error is about, as a path (`['routes', 'chat']`), or null when it is not the API's. */
export function apiPartOf(message: string, api: ConfigDocument): [keyof ConfigDocument, string?] | null {
  for (const section of ['routes', 'providers'] as const) {
    // Longest first: a route `a.b` is named by `routes.a.b...`, which `routes.a` would also seem to name.
    const items = Object.keys(api[section] ?? {}).sort((a, b) => b.length - a.length);
    const item = items.find((name) => names(message, `${section}.${name}`));
    if (item !== undefined) return [section, item];
  }
  for (const section of WHOLE_SECTIONS) if (api[section] !== undefined && names(message, section)) return [section];
  const setting = Object.keys(api.settings ?? {}).find((name) => names(message, `settings.${name}`));
  return setting === undefined ? null : ['settings', setting];
}

function without(api: ConfigDocument, [section, item]: [keyof ConfigDocument, string?]): ConfigDocument {
  const { [section]: removed, ...rest } = api;
  if (item === undefined) return rest;
  const { [item]: _gone, ...kept } = (removed ?? {}) as Record<string, unknown>;
  return { ...rest, [section]: kept };
}

/**
 * The config at start. The stored API layer was written against the config file and environment of its day; a part
 * of it that no longer resolves against those the gateway starts with (a route naming a provider the file has since
 * dropped) is left out, named with why, rather than stopping the start: the operator could not reach the API to
 * remove it. A fault of the file itself still stops the start. Each part left out is one of the API's routes or
 * providers, one of its settings, or a section it holds whole (routing rules, plugins, alerts, MCP, guardrails, cache).
 */
export function resolveAtStart(layers: ConfigLayers, env: Env, version: number): { config: RuntimeConfig; api: ConfigDocument; dropped: string[] } {
  let api = layers.api;
  const dropped: string[] = [];
  for (;;) {
    try {
      return { config: resolveRuntimeConfig({ ...layers, api }, env, version), api, dropped };
    } catch (err) {
      const part = err instanceof ConfigError ? apiPartOf(err.message, api) : null;
      if (part === null) throw err;
      dropped.push(`${part.filter(Boolean).join('.')}: ${(err as Error).message}`);
      api = without(api, part);
    }
  }
}
