import { isDeepStrictEqual } from 'node:util';
import { isRecord } from '../core/is-record.js';
import { vendorById } from '../providers/registry.js';
import { baseUrlWithQuery } from '../providers/base-url.js';
import { cacheView, guardrailsView, providerView, routeView, settingsView } from './present.js';
import type { RuntimeConfig } from '../core/config.js';
import type { ConfigDocument, ProviderConfig } from './schema.js';
import type { ProviderView } from './views.js';

/** Fields of the effective view that describe the running gateway and are not written. */
const READ_ONLY = ['version', 'precedence', 'file', 'warnings', 'file_rejection'];
const START_ONLY = ['host', 'port', 'data_dir'];

/** Whether a `PUT /api/config` body is the effective view as `GET /api/config` answers it (lists, not maps). */
export function isEffectiveView(body: unknown): body is Record<string, unknown> {
  return isRecord(body) && (Array.isArray(body.providers) || Array.isArray(body.routes) || Array.isArray(body.precedence));
}

/** The leaves of `next` that differ from `base`, as a nested object; undefined when none do. */
function leafDiff(next: unknown, base: unknown): unknown {
  if (isRecord(next) && isRecord(base)) {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(next)) {
      const diff = leafDiff(value, base[key]);
      if (diff !== undefined) out[key] = diff;
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }
  return isDeepStrictEqual(next, base) ? undefined : next;
}

function named(items: unknown): Array<Record<string, unknown> & { name: string }> {
  if (!Array.isArray(items)) return [];
  return items.filter((item): item is Record<string, unknown> & { name: string } => isRecord(item) && typeof item.name === 'string');
}

/**
 * The API's collector headers replace the lower layers' as a whole, so headers that differ at all (one added, one
 * removed) go whole: a leaf diff would keep only the added one and silently drop the file's (`***`, its credential).
 */
function withWholeTracingHeaders(diff: unknown, settings: Record<string, unknown>, baseView: Record<string, unknown>): unknown {
  const headers = isRecord(settings.tracing) ? settings.tracing.headers : undefined;
  const baseHeaders = isRecord(baseView.tracing) ? baseView.tracing.headers : undefined;
  if (headers === undefined || isDeepStrictEqual(headers, baseHeaders)) return diff;
  const out = isRecord(diff) ? diff : {};
  return { ...out, tracing: { ...(isRecord(out.tracing) ? out.tracing : {}), headers } };
}

/** Names of providers a baseline must know for the view to resolve: those not built in and not in the file. */
export function viewProviderStubs(view: Record<string, unknown>, file: ConfigDocument): NonNullable<ConfigDocument['providers']> {
  const stubs: NonNullable<ConfigDocument['providers']> = {};
  for (const provider of named(view.providers)) {
    if (vendorById(provider.name) || file.providers?.[provider.name]) continue;
    stubs[provider.name] = typeof provider.type === 'string' ? { type: provider.type } : {};
  }
  return stubs;
}

/**
 * Turns the effective view (what `GET /api/config` answers) into the API layer it stands for: what differs
 * from the lower layers (file, environment, defaults), plus every item the API defines. `baselineWith` gives
 * the config of the lower layers (with the given API settings, and a bare stub for each provider only the
 * API defines, so such a provider's defaults are not pinned into the API layer); `running` gives the start-only settings. Keys
 * from the file or the environment are shown for information and stay where they are. The result is
 * validated by the caller like any other document.
 */
export function documentFromView(
  view: Record<string, unknown>,
  baselineWith: (settings: unknown) => RuntimeConfig,
  running: RuntimeConfig,
  pluginsShown: (entries: RuntimeConfig['plugins']) => unknown = (entries) => entries,
): Record<string, unknown> {
  let baseline = baselineWith(undefined);
  const document: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(view)) {
    if (!READ_ONLY.includes(key) && !['settings', 'providers', 'routes', 'routing_rules', 'plugins', 'cache', 'guardrails'].includes(key)) document[key] = value;
  }

  if (isRecord(view.settings)) {
    const settings: Record<string, unknown> = { ...view.settings };
    if (isRecord(settings.metrics) && 'bearer_token_set' in settings.metrics) {
      // Read-only: the view never shows the token. Set, it stands for the token in force (`***`, restored to the
      // API's stored token, or left to the file or the environment that gives it).
      const { bearer_token_set: set, ...metrics } = settings.metrics;
      settings.metrics = set === true && metrics.bearer_token === undefined ? { ...metrics, bearer_token: '***' } : metrics;
    }
    const runningView = settingsView(running.settings);
    for (const key of START_ONLY) if (isDeepStrictEqual(settings[key], runningView[key])) delete settings[key];
    const baseView = settingsView(baseline.settings);
    const diff = withWholeTracingHeaders(leafDiff(settings, baseView), settings, baseView);
    if (diff !== undefined) document.settings = diff;
    // Providers inherit settings (timeouts, say): compare them with defaults under the view's settings.
    baseline = baselineWith(diff);
  }

  if (Array.isArray(view.providers)) {
    const providers: Record<string, unknown> = {};
    for (const item of named(view.providers)) {
      const { name, source, keys, ...fields } = item;
      const base = baseline.providers.get(name);
      const baseView: Record<string, unknown> = base ? { ...providerView(base) } : {};
      const entry: Record<string, unknown> = {};
      for (const [field, value] of Object.entries(fields)) {
        // The API's price for a model replaces the lower layers' whole: a price that differs at all goes whole.
        const diff = field === 'prices' && isRecord(value) ? ownEntries(value, baseView[field], undefined) : leafDiff(value, baseView[field]);
        if (diff !== undefined) entry[field] = field === 'models' || field === 'type' ? value : diff;
      }
      // A custom provider needs its type in the API layer unless the file gives it.
      if (entry.type === undefined && typeof fields.type === 'string' && !vendorById(name) && baseline.providers.get(name)?.source !== 'file') {
        entry.type = fields.type;
      }
      const apiKeys = (Array.isArray(keys) ? keys : [])
        .filter((key): key is Record<string, unknown> => isRecord(key) && (key.source === undefined || key.source === 'api'))
        .map(({ source: _source, ...key }) => (key.models === null ? (({ models: _models, ...rest }) => rest)(key) : key));
      if (apiKeys.length > 0) entry.keys = apiKeys;
      if (Object.keys(entry).length > 0 || source === 'api') providers[name] = entry;
    }
    document.providers = providers;
  }

  if (Array.isArray(view.routes)) {
    const routes: Record<string, unknown> = {};
    for (const item of named(view.routes)) {
      const { name, source, ...route } = item;
      const base = baseline.routes.get(name);
      const baseRoute = base ? (({ name: _n, source: _s, ...rest }) => rest)(routeView(base)) : undefined;
      if (source === 'api' || !isDeepStrictEqual(JSON.parse(JSON.stringify(route)), JSON.parse(JSON.stringify(baseRoute ?? null)))) routes[name] = route;
    }
    document.routes = routes;
  }

  if (view.routing_rules !== undefined && !isDeepStrictEqual(view.routing_rules, JSON.parse(JSON.stringify(baseline.routingRules)))) {
    document.routing_rules = view.routing_rules;
  }

  // The cache's fields as the lower layers leave them are theirs; only the fields that differ are the API's.
  if (isRecord(view.cache)) {
    const diff = leafDiff(view.cache, cacheView(baseline.cache));
    if (diff !== undefined) document.cache = diff;
  }

  // Like the plugin list, the guardrails section replaces the file's whole: only one that differs is the API's.
  if (view.guardrails !== undefined && !isDeepStrictEqual(view.guardrails, JSON.parse(JSON.stringify(guardrailsView(baseline.guardrails))))) {
    document.guardrails = view.guardrails;
  }

  // The API's plugin list replaces the file's whole: only a list that differs from the baseline's is the API's.
  // Compared as the view shows them (secret options masked): the file's list read back unchanged stays the file's.
  if (view.plugins !== undefined && !isDeepStrictEqual(view.plugins, JSON.parse(JSON.stringify(pluginsShown(baseline.plugins))))) {
    document.plugins = view.plugins;
  }
  return document;
}

/** Equal as JSON shows them (what a client read and sent back against what the view would show). */
function sameShown(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(JSON.parse(JSON.stringify(a ?? null)), JSON.parse(JSON.stringify(b ?? null)));
}

/** The entries of a map-like field the body sets: those that differ from what is inherited, or that the API already set. */
function ownEntries(value: Record<string, unknown>, inherited: unknown, stored: unknown): Record<string, unknown> | undefined {
  const from = isRecord(inherited) ? inherited : {};
  const held = isRecord(stored) ? stored : {};
  const own = Object.fromEntries(Object.entries(value).filter(([key, entry]) => held[key] !== undefined || !(key in from) || !sameShown(entry, from[key])));
  return Object.keys(own).length > 0 || isRecord(stored) ? own : undefined;
}

/**
 * A provider body (`PUT /api/providers/:name`) without the values it only repeats from below the API: what the
 * provider's `GET` shows includes values it inherits (`timeouts` and `max_response_bytes` from `settings`, the file's
 * `headers`, `models`, `base_url`...), and those written back unchanged stay inherited, not copied into the API layer,
 * where a later change of the setting or the file would no longer reach them. A value the body changes is set; so is
 * one the API layer already sets for this provider (it stays set: a write-back then changes nothing). Compared field
 * by field where the layers merge field by field (timeouts by leaf, headers by name, prices by model, models by
 * name), else whole. `inherited` is the provider as the lower layers give it (the view of the config without the
 * API's entry for it), or undefined to keep the body as it is; `ownType` keeps `type` (a provider only the API
 * defines needs it). Keys are the API's own (those shown from the file or the environment are already left out).
 */
export function withoutInheritedFields(body: ProviderConfig, inherited: ProviderView | undefined, stored: ProviderConfig | undefined, ownType: boolean): ProviderConfig {
  if (!inherited) return body;
  const shown = inherited as unknown as Record<string, unknown>;
  const held = (stored ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined) continue;
    // The file's and the environment's keys shown beside the API's were left out: none left is no keys of the API's.
    if (field === 'keys' && Array.isArray(value) && value.length === 0 && held.keys === undefined) continue;
    if (field === 'keys' || field === 'api_key' || (field === 'type' && ownType)) {
      out[field] = value;
      continue;
    }
    if ((field === 'timeouts' || field === 'headers' || field === 'prices') && isRecord(value)) {
      const own = ownEntries(value, shown[field], held[field]);
      if (own !== undefined) out[field] = own;
      continue;
    }
    if (field === 'models' && Array.isArray(value)) {
      const storedModels = Array.isArray(held.models) ? (held.models as unknown[]) : undefined;
      const own = (value as unknown[]).filter((model) => typeof model !== 'string' || !inherited.models.includes(model) || storedModels?.includes(model));
      if (own.length > 0 || storedModels !== undefined) out[field] = own;
      continue;
    }
    if (held[field] !== undefined || !sameShown(value, shown[field])) out[field] = value;
  }
  return out as ProviderConfig;
}

/** Everything a request would see of a config, secrets included (for comparing, never for showing). */
export function effectiveFingerprint(config: RuntimeConfig): string {
  return JSON.stringify({
    settings: settingsView(config.settings),
    providers: [...config.providers.values()].map((provider) => ({
      ...providerView(provider),
      base_url: baseUrlWithQuery(provider),
      headers: provider.headers,
      keys: provider.keys.map((key) => [key.id, key.value, key.raw, key.weight, key.models, key.source]),
    })),
    routes: [...config.routes.values()].map(routeView),
    routing_rules: config.routingRules,
    plugins: config.plugins,
    cache: cacheView(config.cache),
    guardrails: guardrailsView(config.guardrails),
  });
}
