import type { VendorDefinition } from '../../core/provider.js';

/**
 * Google Cloud Vertex AI: Gemini models (`publishers/google`) and Anthropic's Claude (`publishers/anthropic`)
 * under one project and location. The key is a service-account JSON (usually `file:/path/sa.json`), whose
 * private key signs the OAuth assertion locally; a user or impersonated credential; an access token (`ya29...`) is used
 * as it is. A key is not required: without one the adapter takes Application Default Credentials (gcloud's file, then
 * the Google Cloud metadata server: GKE, Cloud Run, GCE), looked up on the first call (adc.ts).
 */
export const vertexVendors: VendorDefinition[] = [
  {
    id: 'vertex', displayName: 'Google Vertex AI', format: 'vertex',
    // `{region}` is the location (`us-central1` unless configured); the `global` location has no prefix. As the
    // Google Gen AI SDK's GOOGLE_VERTEX_BASE_URL, the host: the API version is added to it.
    defaultBaseUrl: 'https://{region}-aiplatform.googleapis.com', versionPath: '/v1', auth: { kind: 'none' },
    keyRequired: false, keyEnv: ['VERTEX_CREDENTIALS', 'GOOGLE_APPLICATION_CREDENTIALS'], baseUrlEnv: ['VERTEX_BASE_URL', 'GOOGLE_VERTEX_BASE_URL'],
    regionEnv: ['VERTEX_LOCATION', 'GOOGLE_CLOUD_LOCATION'],
    // As google-auth-library's getProjectId: before the credential's own project and the metadata server's.
    projectEnv: ['GOOGLE_CLOUD_PROJECT', 'GCLOUD_PROJECT'], catalogId: 'google', catalogFallbacks: ['anthropic'],
    docsUrl: 'https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference',
  },
];
