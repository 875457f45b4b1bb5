import type { ProviderFamily } from '../../core/provider.js';
import { vertexAdapter } from './adapter.js';
import { vertexVendors } from './vendors.js';

/** The Vertex AI wire format (Gemini and Claude on Google Cloud) and its vendor row. */
export const vertexFamily: ProviderFamily = { adapter: vertexAdapter, vendors: vertexVendors };
