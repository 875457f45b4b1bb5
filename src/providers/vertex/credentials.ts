import { readFileSync } from 'node:fs';
import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';

/** The fields of a Google service-account key file that the OAuth JWT flow needs. */
export interface ServiceAccount {
  client_email: string;
  private_key: string;
  private_key_id?: string;
  project_id?: string;
  token_uri?: string;
}

export type VertexCredential = { kind: 'service-account'; account: ServiceAccount } | { kind: 'access-token'; token: string };

const parsed = new Map<string, VertexCredential>();

function invalid(message: string): GatewayError {
  return gatewayError('invalid_provider_credentials', `vertex: ${message}`);
}

/**
 * Reads a credential: a service-account JSON, a path to one (what GOOGLE_APPLICATION_CREDENTIALS holds; read once),
 * or a ready access token. Parsed once per distinct value. `fromClient` is set for a key a client sent
 * (`x-tollgate-provider-key`): it is never read as a path, since that would let any client make the gateway read
 * a file of its machine (an operator's service-account file included) and use or reveal what it holds.
 */
export function vertexCredential(value: string, fromClient = false): VertexCredential {
  const cacheKey = fromClient ? `client\0${value}` : value;
  const cached = parsed.get(cacheKey);
  if (cached) return cached;
  let text = value.trim();
  if (!fromClient && !text.startsWith('{') && (text.startsWith('/') || text.endsWith('.json'))) {
    try {
      text = readFileSync(text, 'utf8');
    } catch {
      throw invalid(`cannot read the service-account file '${text}'.`);
    }
  }
  let credential: VertexCredential;
  if (text.startsWith('{')) {
    let account: Partial<ServiceAccount>;
    try {
      account = JSON.parse(text) as Partial<ServiceAccount>;
    } catch {
      throw invalid('the service-account key is not valid JSON.');
    }
    if (typeof account.client_email !== 'string' || typeof account.private_key !== 'string') {
      throw invalid('the service-account key has no client_email or private_key.');
    }
    credential = { kind: 'service-account', account: account as ServiceAccount };
  } else {
    credential = { kind: 'access-token', token: text };
  }
  if (parsed.size > 100) parsed.clear();
  parsed.set(cacheKey, credential);
  return credential;
}
