import type { RuntimeConfig } from '../core/config.js';
import { catalogModels } from './catalog.js';
import { unitPrices } from './prices.js';

/** One model as tollgate lists it: `<provider>/<model>`, where it comes from, what it costs. */
export interface ModelEntry {
  id: string;
  provider: string;
  model: string;
  name: string | null;
  context_window: number | null;
  capabilities: string[];
  /** USD per million tokens as tollgate would bill it (operator prices over the catalogue); null if unpriced. */
  pricing: { input_per_mtok: number; output_per_mtok: number; request_usd: number } | null;
  /** `catalog` (bundled price catalogue) or `config` (listed under providers.<name>.models). */
  source: 'catalog' | 'config';
}

const lists = new WeakMap<RuntimeConfig, ModelEntry[]>();
const byId = new WeakMap<RuntimeConfig, Map<string, ModelEntry>>();

/** Every model of every provider in the running config; built once per config version. */
export function modelEntries(config: RuntimeConfig): ModelEntry[] {
  const cached = lists.get(config);
  if (cached) return cached;
  const out: ModelEntry[] = [];
  for (const provider of config.providers.values()) {
    const seen = new Set<string>();
    const add = (model: string, source: ModelEntry['source'], name: string | null, contextWindow: number | null, capabilities: string[]): void => {
      if (seen.has(model)) return;
      seen.add(model);
      const prices = unitPrices(provider, model);
      out.push({
        id: `${provider.name}/${model}`,
        provider: provider.name,
        model,
        name,
        context_window: contextWindow,
        capabilities,
        pricing: prices ? { input_per_mtok: prices.input_per_mtok, output_per_mtok: prices.output_per_mtok, request_usd: prices.request_usd } : null,
        source,
      });
    };
    for (const model of provider.models) add(model, 'config', null, null, []);
    for (const entry of catalogModels(provider.vendor)) add(entry.id, 'catalog', entry.name, entry.contextWindow, entry.capabilities);
  }
  lists.set(config, out);
  return out;
}

/** The listed model with this id, or undefined; the index is built once per config version, on first use. */
export function findModelEntry(config: RuntimeConfig, id: string): ModelEntry | undefined {
  let index = byId.get(config);
  if (!index) {
    index = new Map(modelEntries(config).map((entry) => [entry.id, entry]));
    byId.set(config, index);
  }
  return index.get(id);
}

/** Models of one provider and/or whose id or name contains `search` (case-insensitive). */
export function filterModels(entries: readonly ModelEntry[], filter: { provider?: string | undefined; search?: string | undefined }): ModelEntry[] {
  const needle = filter.search?.toLowerCase();
  return entries.filter(
    (entry) =>
      (filter.provider === undefined || entry.provider === filter.provider) &&
      (needle === undefined || entry.id.toLowerCase().includes(needle) || (entry.name?.toLowerCase().includes(needle) ?? false)),
  );
}
