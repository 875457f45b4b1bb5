import type { VendorDefinition } from '../../core/provider.js';

/**
 * Amazon Bedrock through its model-agnostic Converse API. The key is either an access key pair
 * (`ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]`, signed with SigV4) or a Bedrock API key (no colon, sent as
 * a bearer token); the adapter's `authorize` hook applies either, so the row's own auth is `none`. Keys are
 * optional here because the adapter falls back to the standard AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
 * variables, which come as a pair and so cannot be a single `keyEnv` entry, and without any of them to AWS's default
 * credential chain (an IAM role, see aws-chain.ts).
 */
export const bedrockVendors: VendorDefinition[] = [
  {
    id: 'bedrock',
    displayName: 'Amazon Bedrock',
    format: 'bedrock',
    defaultBaseUrl: 'https://bedrock-runtime.{region}.amazonaws.com',
    auth: { kind: 'none' },
    keyRequired: false,
    keyEnv: ['AWS_BEARER_TOKEN_BEDROCK'],
    baseUrlEnv: ['AWS_ENDPOINT_URL_BEDROCK_RUNTIME', 'BEDROCK_BASE_URL'],
    regionEnv: ['AWS_REGION', 'AWS_DEFAULT_REGION'],
    catalogId: 'aws',
    docsUrl: 'https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html',
  },
];
