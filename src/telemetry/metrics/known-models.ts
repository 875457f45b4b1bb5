import { inCatalog } from '../../catalog/catalog.js';
import type { RuntimeConfig } from '../../core/config.js';
import type { Pool } from './label-values.js';

/** Per config version: the `<provider>/<model>` names the config itself gives (route targets and fallbacks, `models`, `prices`). */
const configured = new WeakMap<RuntimeConfig, ReadonlySet<string>>();

function configuredModels(config: RuntimeConfig): ReadonlySet<string> {
  let names = configured.get(config);
  if (names) return names;
  const set = new Set<string>();
  for (const route of config.routes.values()) {
    for (const target of route.targets) set.add(target.model);
    for (const fallback of route.fallbacks) set.add(fallback);
  }
  for (const provider of config.providers.values()) {
    for (const model of provider.models) set.add(`${provider.name}/${model}`);
    // `*` prices every model a client may name: it makes none of them known.
    for (const model of provider.prices.keys()) if (model !== '*') set.add(`${provider.name}/${model}`);
  }
  configured.set(config, (names = set));
  return names;
}

/**
 * The model label's pool of a provider's model: none for a model the config names (the operator's, bounded by the
 * config), `catalog` for one the catalogue knows (a client may name any of its hundreds), `unknown` for a name nobody
 * knows (one a client made up). Unknown names then never take the place of a real model, however many there are.
 */
export function modelPool(config: RuntimeConfig, provider: string, model: string): Pool {
  if (configuredModels(config).has(`${provider}/${model}`)) return null;
  // The catalogue's ids only: the model list (findModelEntry) prices each of its 1,000+ models when first built,
  // a quarter to half a second of blocked event loop on the first request after every config change.
  const runtime = config.providers.get(provider);
  return runtime !== undefined && inCatalog(runtime.vendor, model) ? 'catalog' : 'unknown';
}
