import type { ProviderFamily } from '../../core/provider.js';
import { bedrockAdapter } from './adapter.js';
import { bedrockVendors } from './vendors.js';

/** Amazon Bedrock (Converse API): SigV4 or API-key auth, AWS event-stream framing. */
export const bedrockFamily: ProviderFamily = { adapter: bedrockAdapter, vendors: bedrockVendors };
