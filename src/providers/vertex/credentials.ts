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

/**
 * The fields of a Google user credential (`"type": "authorized_user"`), what `gcloud auth application-default login`
 * writes as the Application Default Credentials file: an OAuth client and a refresh token, exchanged for access tokens.
 */
export interface AuthorizedUser {
  client_id: string;
  client_secret: string;
  refresh_token: string;
  /** The project billed for quota; gcloud sets it to the current project. */
  quota_project_id?: string;
  token_uri?: string;
}

export type VertexCredential =
  | { kind: 'service-account'; account: ServiceAccount }
  | { kind: 'authorized-user'; user: AuthorizedUser }
  | { kind: 'access-token'; token: string };

/** A credential that is exchanged at a token endpoint for access tokens (see token.ts). */
export type TokenCredential = Exclude<VertexCredential, { kind: 'access-token' }>;

const parsed = new Map<string, VertexCredential>();

function invalid(message: string): GatewayError {
  return gatewayError('invalid_provider_credentials', `vertex: ${message}`);
}

/** A parsed key file as the credential it is, or null when it is neither a service account nor a user credential. */
function credentialOf(json: Record<string, unknown>): VertexCredential | null {
  const isString = (name: string) => typeof json[name] === 'string';
  if (isString('client_email') && isString('private_key')) return { kind: 'service-account', account: json as unknown as ServiceAccount };
  if (json.type === 'authorized_user' || (isString('refresh_token') && !isString('private_key'))) {
    if (!isString('client_id') || !isString('client_secret') || !isString('refresh_token')) {
      throw invalid('the user credential (authorized_user) has no client_id, client_secret or refresh_token.');
    }
    return { kind: 'authorized-user', user: json as unknown as AuthorizedUser };
  }
  return null;
}

/**
 * Reads a credential: a service-account JSON, a user credential JSON (gcloud's Application Default Credentials), a
 * path to either (what GOOGLE_APPLICATION_CREDENTIALS holds; read once), or a ready access token. Parsed once per
 * distinct value. `fromClient` is set for a key a client sent (`x-tollgate-provider-key`): it is never read as a
 * path, since that would let any client make the gateway read a file of its machine (an operator's service-account
 * file included) and use or reveal what it holds.
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
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw invalid('the service-account key is not valid JSON.');
    }
    const read = json !== null && typeof json === 'object' && !Array.isArray(json) ? credentialOf(json as Record<string, unknown>) : null;
    if (!read) throw invalid('the service-account key has no client_email or private_key.');
    credential = read;
  } else {
    credential = { kind: 'access-token', token: text };
  }
  if (parsed.size > 100) parsed.clear();
  parsed.set(cacheKey, credential);
  return credential;
}
