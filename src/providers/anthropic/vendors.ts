import type { VendorDefinition } from '../../core/provider.js';

/** Anthropic's own Messages API. Other hosts of the same wire format are further rows. */
export const anthropicVendors: VendorDefinition[] = [
  {
    // As the Anthropic SDK's ANTHROPIC_BASE_URL: the host, to which the SDK (and tollgate) adds /v1.
    id: 'anthropic', displayName: 'Anthropic', format: 'anthropic', defaultBaseUrl: 'https://api.anthropic.com', versionPath: '/v1',
    auth: { kind: 'header', header: 'x-api-key' }, keyRequired: true,
    keyEnv: ['ANTHROPIC_API_KEY'], baseUrlEnv: ['ANTHROPIC_BASE_URL'],
    // The API rejects requests without a version; this is the one the adapter's shapes follow.
    defaultHeaders: { 'anthropic-version': '2023-06-01' },
    catalogId: 'anthropic',
    docsUrl: 'https://docs.anthropic.com/en/api/messages',
  },
];
