import type { VendorDefinition } from '../../core/provider.js';

/** Cohere's own platform, API v2 (`POST /v2/chat`, `POST /v2/embed`). */
export const cohereVendors: VendorDefinition[] = [
  {
    // The Cohere SDK's base URL (CO_API_URL) is the host; its v2 client adds /v2.
    id: 'cohere', displayName: 'Cohere', format: 'cohere', defaultBaseUrl: 'https://api.cohere.com', versionPath: '/v2', auth: { kind: 'bearer' },
    keyRequired: true, keyEnv: ['COHERE_API_KEY', 'CO_API_KEY'], baseUrlEnv: ['COHERE_BASE_URL', 'CO_API_URL'], catalogId: 'cohere',
    docsUrl: 'https://docs.cohere.com/v2/reference/chat',
  },
];
