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

/**
 * An impersonated service account (`"type": "impersonated_service_account"`, what
 * `gcloud auth application-default login --impersonate-service-account` writes): the source credential's token is
 * exchanged for the target account's at IAM Credentials' `generateAccessToken`, the URL the file names.
 */
export interface ImpersonatedAccount {
  source: Extract<VertexCredential, { kind: 'service-account' | 'authorized-user' }>;
  /** `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/{email}:generateAccessToken` */
  url: string;
  delegates: string[];
  quota_project_id?: string;
}

export type VertexCredential =
  | { kind: 'service-account'; account: ServiceAccount }
  | { kind: 'authorized-user'; user: AuthorizedUser }
  | { kind: 'impersonated'; impersonated: ImpersonatedAccount }
  /** No key at all: the Google Cloud metadata server's token for the service account attached to the host (see adc.ts). */
  | { kind: 'metadata-server'; baseUrl: string; adcFile: string | null }
  | { kind: 'access-token'; token: string };

/** A credential that is exchanged for access tokens (see token.ts). */
export type TokenCredential = Exclude<VertexCredential, { kind: 'access-token' }>;

/** IAM Credentials, the only place a client's own impersonated credential may send its source token. */
const IAM_CREDENTIALS_ORIGIN = 'https://iamcredentials.googleapis.com';

const parsed = new Map<string, VertexCredential>();

function invalid(message: string): GatewayError {
  return gatewayError('invalid_provider_credentials', `vertex: ${message}`);
}

/**
 * An impersonated service account's file, checked as google-auth-library checks it. A client's own (x-tollgate-provider-key)
 * may only name Google's IAM Credentials: any other URL would make the gateway POST a token where the client chose.
 */
function impersonatedOf(json: Record<string, unknown>, fromClient: boolean): VertexCredential {
  const url = json.service_account_impersonation_url;
  if (typeof url !== 'string' || url.length > 256 || !/^https?:\/\/[^/]+\/.*[^/]+:generateAccessToken$/.test(url)) {
    throw invalid('the impersonated service account (impersonated_service_account) has no service_account_impersonation_url ending in :generateAccessToken.');
  }
  if (fromClient && !url.startsWith(`${IAM_CREDENTIALS_ORIGIN}/`)) {
    throw invalid(`a client's impersonated service account may only name ${IAM_CREDENTIALS_ORIGIN} as its service_account_impersonation_url.`);
  }
  const sourceJson = json.source_credentials;
  const source = sourceJson !== null && typeof sourceJson === 'object' && !Array.isArray(sourceJson) ? credentialOf(sourceJson as Record<string, unknown>, fromClient) : null;
  if (source?.kind !== 'service-account' && source?.kind !== 'authorized-user') {
    throw invalid('the impersonated service account (impersonated_service_account) has no source_credentials that are a user credential or a service account.');
  }
  const delegates = Array.isArray(json.delegates) ? json.delegates.filter((delegate): delegate is string => typeof delegate === 'string') : [];
  const quota = typeof json.quota_project_id === 'string' ? json.quota_project_id : undefined;
  return { kind: 'impersonated', impersonated: { source, url, delegates, ...(quota ? { quota_project_id: quota } : {}) } };
}

/** A parsed key file as the credential it is, or null when it is neither a service account nor a user credential. */
function credentialOf(json: Record<string, unknown>, fromClient: boolean): VertexCredential | null {
  const isString = (name: string) => typeof json[name] === 'string';
  if (json.type === 'impersonated_service_account') return impersonatedOf(json, fromClient);
  if (json.type === 'external_account' || json.type === 'external_account_authorized_user') {
    // Workload identity federation exchanges another cloud's token at Google's STS: not done here. On GKE, Workload
    // Identity serves the federated account's tokens through the metadata server, which a provider without a key uses.
    throw invalid(
      `workload identity federation ("type": "${json.type}") is not supported; configure a service-account key, or give the provider no key on Google Cloud (GKE Workload Identity, Cloud Run, GCE) to use the metadata server.`,
    );
  }
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
 * Reads a credential: a service-account JSON, a user credential JSON (gcloud's Application Default Credentials), an
 * impersonated service account's JSON (gcloud's with `--impersonate-service-account`), a path to any of them (what GOOGLE_APPLICATION_CREDENTIALS holds; read once), or a ready access token. Parsed once per
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
    const read = json !== null && typeof json === 'object' && !Array.isArray(json) ? credentialOf(json as Record<string, unknown>, fromClient) : null;
    if (!read) throw invalid('the service-account key has no client_email or private_key.');
    credential = read;
  } else {
    credential = { kind: 'access-token', token: text };
  }
  if (parsed.size > 100) parsed.clear();
  parsed.set(cacheKey, credential);
  return credential;
}
