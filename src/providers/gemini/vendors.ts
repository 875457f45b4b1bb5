import type { VendorDefinition } from '../../core/provider.js';

/** Google AI Studio's Gemini API (generativelanguage.googleapis.com), keyed by an API key header. */
export const geminiVendors: VendorDefinition[] = [
  {
    id: 'gemini', displayName: 'Google Gemini API', format: 'gemini',
    // As the Google Gen AI SDK's GOOGLE_GEMINI_BASE_URL: the host, to which the SDK adds its API version (v1beta).
    defaultBaseUrl: 'https://generativelanguage.googleapis.com', versionPath: '/v1beta', auth: { kind: 'header', header: 'x-goog-api-key' },
    keyRequired: true, keyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'], baseUrlEnv: ['GEMINI_BASE_URL', 'GOOGLE_GEMINI_BASE_URL'], catalogId: 'google',
    docsUrl: 'https://ai.google.dev/api/generate-content',
  },
];
