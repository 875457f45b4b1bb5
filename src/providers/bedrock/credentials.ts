import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';

/** An AWS access key pair (the shape SignatureV4 takes). */
export interface AwsKeyPair {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** How a request to Bedrock is authenticated: a SigV4 access key pair, or a Bedrock API key (bearer token). */
export type BedrockCredential = { kind: 'sigv4'; credentials: AwsKeyPair } | { kind: 'bearer'; token: string };

function missing(provider: string): GatewayError {
  return gatewayError('provider_key_missing', `No AWS credentials for provider '${provider}': set its key to ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN] or a ` +
      'Bedrock API key, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK).');
}

/**
 * Reads the configured key: `ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]` for SigV4, or a Bedrock API key,
 * which never contains a colon. Without a key, the standard AWS variables are read from process.env here
 * because an access key pair is two variables, which the vendor table's single `keyEnv` value cannot carry.
 */
export function bedrockCredential(apiKey: string | null, provider: string, env: NodeJS.ProcessEnv = process.env): BedrockCredential {
  if (apiKey !== null && apiKey !== '') {
    const parts = apiKey.split(':');
    if (parts.length === 1) return { kind: 'bearer', token: apiKey };
    const [accessKeyId, secretAccessKey, sessionToken] = parts;
    if (parts.length > 3 || !accessKeyId || !secretAccessKey) {
      throw gatewayError('invalid_provider_key', `The key of provider '${provider}' is neither ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN] nor a Bedrock API key.`);
    }
    return { kind: 'sigv4', credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } };
  }
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (accessKeyId && secretAccessKey) {
    const sessionToken = env.AWS_SESSION_TOKEN;
    return { kind: 'sigv4', credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } };
  }
  const token = env.AWS_BEARER_TOKEN_BEDROCK;
  if (token) return { kind: 'bearer', token };
  throw missing(provider);
}
