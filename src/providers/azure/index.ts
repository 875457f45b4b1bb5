import type { ProviderFamily } from '../../core/provider.js';
import { azureAdapter } from './adapter.js';
import { azureVendors } from './vendors.js';

export { azureAdapter } from './adapter.js';

/** Azure OpenAI (`azure`) and Azure AI Foundry model inference (`azure-ai`): one adapter, two vendor rows. */
export const azureFamily: ProviderFamily = { adapter: azureAdapter, vendors: azureVendors };
