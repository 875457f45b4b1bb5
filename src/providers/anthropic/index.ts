import type { ProviderFamily } from '../registry.js';
import { anthropicAdapter } from './adapter.js';
import { anthropicVendors } from './vendors.js';

export { anthropicAdapter } from './adapter.js';
export { anthropicVendors } from './vendors.js';

/** The Anthropic Messages wire format and its vendors. */
export const anthropicFamily: ProviderFamily = { adapter: anthropicAdapter, vendors: anthropicVendors };
