import type { ProviderAdapter, VendorDefinition } from '../../core/provider.js';
import { geminiAdapter } from './adapter.js';
import { geminiVendors } from './vendors.js';

export { geminiAdapter } from './adapter.js';
export { geminiVendors } from './vendors.js';
// The pure transforms, for adapters that speak Gemini's body format elsewhere (Vertex AI).
export { toGeminiRequest, toGeminiContents } from './request.js';
export { completionFromGemini } from './response.js';
export { createGeminiStreamDecoder } from './stream.js';
export { geminiError, geminiStreamError } from './errors.js';
export { usageFromGemini } from '../../wire/gemini/usage.js';
export { toGeminiSchema } from '../../wire/gemini/schema.js';

/** The `gemini` wire format and its vendor row (shape of registry.ts's ProviderFamily). */
export const geminiFamily: { adapter: ProviderAdapter; vendors: VendorDefinition[] } = { adapter: geminiAdapter, vendors: geminiVendors };
