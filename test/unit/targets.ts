import type { ProviderOptions, Target, VendorDefinition } from '../../src/core/provider.js';
import { apiRoot } from '../../src/providers/base-url.js';
import { vendorById } from '../../src/providers/registry.js';

/** The vendor row with this id; fails loudly when the table no longer has it. */
export function vendor(id: string): VendorDefinition {
  const found = vendorById(id);
  if (!found) throw new Error(`test setup: no vendor "${id}" in the registry`);
  return found;
}

export interface TargetOptions {
  vendorId?: string;
  name?: string;
  baseUrl?: string;
  headers?: Record<string, string>;
  model?: string;
  apiKey?: string | null;
  options?: ProviderOptions;
}

/** A hand-built target, independent of config resolution, for testing adapter transforms. */
export function makeTarget(options: TargetOptions = {}): Target {
  const vendorId = options.vendorId ?? 'openai';
  const def = vendor(vendorId);
  return {
    provider: {
      name: options.name ?? vendorId,
      vendor: def,
      // As config resolution would: the API root the vendor's default base URL stands for.
      baseUrl: options.baseUrl ?? apiRoot(def.defaultBaseUrl, def),
      headers: options.headers ?? {},
      timeouts: { firstByteMs: 1_000, totalMs: 5_000, idleMs: 5_000 },
      maxResponseBytes: 32 * 1024 * 1024,
      options: options.options ?? {},
    },
    model: options.model ?? 'upstream-model',
    apiKey: options.apiKey === undefined ? 'sk-test' : options.apiKey,
    keySource: options.apiKey === null ? 'none' : 'file',
    keyId: options.apiKey === null ? null : 'test-key',
  };
}
