import type { ProviderFamily } from '../../core/provider.js';
import { anthropicAdapter } from './adapter.js';
import { anthropicVendors } from './vendors.js';

export { anthropicAdapter } from './adapter.js';
export { anthropicVendors } from './vendors.js';

/** The Anthropic Messages wire format and its vendors. */
export const anthropicFamily: ProviderFamily = { adapter: anthropicAdapter, vendors: anthropicVendors };
// The pure transforms, for adapters that speak Anthropic's body format elsewhere (Vertex AI).
export { defaultMaxTokens, messagesBody } from './request.js';
export { completionOf } from './response.js';
export { createAnthropicStreamDecoder } from './stream.js';
export { errorFromResponse as anthropicError } from './errors.js';
export { sendsClaudeMessages, withoutLogprobs } from './logprobs.js';
