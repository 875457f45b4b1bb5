import { findProvider, type ModelInfo } from '@pydantic/genai-prices';
import type { VendorDefinition } from '../core/provider.js';

export interface CatalogModel {
  id: string;
  name: string | null;
  contextWindow: number | null;
  /** What the catalogue's price list says the model bills for: prompt caching, audio, images. */
  capabilities: string[];
}

const cache = new Map<string, CatalogModel[]>();

/** Capabilities the price list reveals: a model billed for cache reads caches prompts, and so on. */
function capabilitiesOf(model: ModelInfo): string[] {
  const keys = new Set<string>();
  const prices = Array.isArray(model.prices) ? model.prices.map((entry) => entry.prices) : [model.prices];
  for (const price of prices) for (const [key, value] of Object.entries(price)) if (value !== undefined) keys.add(key);
  const out: string[] = [];
  if (keys.has('cache_read_mtok') || keys.has('cache_write_mtok')) out.push('prompt_caching');
  if (keys.has('input_audio_mtok') || keys.has('cache_audio_read_mtok')) out.push('audio_input');
  if (keys.has('output_audio_mtok')) out.push('audio_output');
  if (keys.has('input_image_mtok') || keys.has('input_image_count')) out.push('image_input');
  if (keys.has('output_image_mtok') || keys.has('output_image_count')) out.push('image_output');
  return out;
}

/**
 * The models the bundled price catalogue (@pydantic/genai-prices, offline data) knows for a vendor, deprecated
 * ones left out. Looked up once per vendor and kept.
 */
const idSets = new Map<string, ReadonlySet<string>>();

/** Whether the catalogue lists the model for the vendor (its ids, without building prices: cheap on any path). */
export function inCatalog(vendor: VendorDefinition, model: string): boolean {
  let ids = idSets.get(vendor.id);
  if (!ids) idSets.set(vendor.id, (ids = new Set(catalogModels(vendor).map((entry) => entry.id))));
  return ids.has(model);
}

export function catalogModels(vendor: VendorDefinition): CatalogModel[] {
  const cached = cache.get(vendor.id);
  if (cached) return cached;
  const catalogId = vendor.catalogId === undefined ? vendor.id : vendor.catalogId;
  const models: CatalogModel[] = [];
  for (const id of catalogId ? [catalogId, ...(vendor.catalogFallbacks ?? [])] : []) {
    const entry = findProvider({ providerId: id });
    // findProvider matches loosely; only accept the provider we asked for.
    if (!entry || entry.id !== id) continue;
    for (const model of entry.models) {
      if (model.deprecated) continue;
      models.push({ id: model.id, name: model.name ?? null, contextWindow: model.context_window ?? null, capabilities: capabilitiesOf(model) });
    }
  }
  cache.set(vendor.id, models);
  return models;
}
