import { findProvider } from '@pydantic/genai-prices';
import type { VendorDefinition } from '../contract.js';

export interface CatalogModel {
  id: string;
  name: string | null;
  contextWindow: number | null;
}

const cache = new Map<string, CatalogModel[]>();

/**
 * The models the bundled price catalogue (@pydantic/genai-prices, offline data) knows for a vendor.
 * Looked up once per vendor and kept.
 */
export function catalogModels(vendor: VendorDefinition): CatalogModel[] {
  const cached = cache.get(vendor.id);
  if (cached) return cached;
  const catalogId = vendor.catalogId === undefined ? vendor.id : vendor.catalogId;
  const entry = catalogId ? findProvider({ providerId: catalogId }) : undefined;
  // findProvider matches loosely; only accept the provider we asked for.
  const models =
    entry && entry.id === catalogId
      ? entry.models
          .filter((model) => !model.deprecated)
          .map((model) => ({ id: model.id, name: model.name ?? null, contextWindow: model.context_window ?? null }))
      : [];
  cache.set(vendor.id, models);
  return models;
}
