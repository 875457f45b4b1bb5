import type { ProviderAdapter, ProviderFamily, VendorDefinition } from '../core/provider.js';
import { openAICompatibleAdapter } from './openai-compatible/adapter.js';
import { openAICompatibleVendors } from './openai-compatible/vendors.js';
import { anthropicFamily } from './anthropic/index.js';
import { azureFamily } from './azure/index.js';
import { bedrockFamily } from './bedrock/index.js';
import { cohereFamily } from './cohere/index.js';
import { geminiFamily } from './gemini/index.js';
import { vertexFamily } from './vertex/index.js';


/**
 * Every wire format tollgate speaks. A new format is one folder under src/providers/ that exports a
 * ProviderFamily, plus one import and one entry here.
 */
const families: ProviderFamily[] = [
  { adapter: openAICompatibleAdapter, vendors: openAICompatibleVendors },
  anthropicFamily,
  azureFamily,
  bedrockFamily,
  cohereFamily,
  geminiFamily,
  vertexFamily,
];

/** Wire formats by id. */
const adapters = new Map<string, ProviderAdapter>(families.map((family) => [family.adapter.format, family.adapter]));

/** Every vendor tollgate knows, by id. */
const vendors = new Map<string, VendorDefinition>(families.flatMap((family) => family.vendors.map((vendor) => [vendor.id, vendor] as const)));

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
