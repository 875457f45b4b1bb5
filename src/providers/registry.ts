import type { ProviderAdapter, VendorDefinition } from './contract.js';
import { openAICompatibleAdapter } from './openai-compatible/adapter.js';
import { openAICompatibleVendors } from './openai-compatible/vendors.js';

/** Wire formats by id. A new format is one folder of transforms plus one line here. */
const adapters = new Map<string, ProviderAdapter>([[openAICompatibleAdapter.format, openAICompatibleAdapter]]);

/** Every vendor tollgate knows, by id. */
const vendors = new Map<string, VendorDefinition>(openAICompatibleVendors.map((vendor) => [vendor.id, vendor]));

export function adapterFor(format: string): ProviderAdapter | undefined {
  return adapters.get(format);
}

export function vendorById(id: string): VendorDefinition | undefined {
  return vendors.get(id);
}

export function allVendors(): VendorDefinition[] {
  return [...vendors.values()];
}

export function knownFormats(): string[] {
  return [...adapters.keys()];
}
