import { createHash } from 'node:crypto';
import { getGlobalDispatcher, request, type Dispatcher } from 'undici';
import type { GatewayError } from '../../core/errors.js';
import type { ServiceAccount } from './credentials.js';
import { gatewayError } from '../../core/errors.js';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const DEFAULT_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** Tokens are renewed this long before they expire, so none expires in flight. */
const RENEW_MARGIN_MS = 5 * 60_000;

interface CachedToken {
  token: string;
  expiresAt: number;
}

const tokens = new Map<string, CachedToken>();
const pending = new Map<string, Promise<CachedToken>>();

/** The token endpoint failed (retryable) or refused the service account (not: the same credentials fail again). */
function tokenError(message: string, refused: boolean): GatewayError {
  return gatewayError(refused ? 'provider_token_refused' : 'provider_token_failed', `vertex: ${message}`);
}

/** The OAuth 2.0 JWT-bearer assertion, signed locally with the service account's RSA key (RS256). */
async function assertion(account: ServiceAccount, audience: string): Promise<string> {
  // Loaded on the first Vertex token, not at start: most gateways never sign one, and jose is ~50 modules to load.
  const { importPKCS8, SignJWT } = await import('jose');
  let key;
  try {
    key = await importPKCS8(account.private_key, 'RS256');
  } catch {
    throw tokenError('the service-account private_key is not a PKCS#8 RSA key.', true);
  }
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ scope: SCOPE })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(account.private_key_id ? { kid: account.private_key_id } : {}) })
    .setIssuer(account.client_email)
    .setSubject(account.client_email)
    .setAudience(audience)
    .setIssuedAt(now)
    .setExpirationTime(now + 3600)
    .sign(key);
}

async function fetchToken(account: ServiceAccount, tokenUrl: string, dispatcher: Dispatcher): Promise<CachedToken> {
  const body = new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: await assertion(account, tokenUrl) }).toString();
  let response;
  try {
    response = await request(tokenUrl, {
      dispatcher,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body,
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
  } catch (err) {
    throw tokenError(`the token endpoint could not be reached (${(err as { code?: string }).code ?? 'connection failed'}).`, false);
  }
  const text = await response.body.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Reported below with the status.
  }
  if (response.statusCode !== 200 || typeof json.access_token !== 'string') {
    const detail = typeof json.error_description === 'string' ? json.error_description : typeof json.error === 'string' ? json.error : `HTTP ${response.statusCode}`;
    // A refused grant (bad key, disabled account) is the operator's to fix; a 5xx may pass.
    throw tokenError(`the token endpoint refused the service account: ${detail}`, response.statusCode < 500);
  }
  const lifetime = typeof json.expires_in === 'number' ? json.expires_in * 1000 : 3_600_000;
  return { token: json.access_token, expiresAt: Date.now() + lifetime };
}

/**
 * Keyed on the private key too: client_email is public, so a key that names another account's email (a client's
 * x-tollgate-provider-key) must sign its own assertion, never be handed the token cached for that account.
 */
function cacheKeyOf(account: ServiceAccount, tokenUrl: string): string {
  const keyHash = createHash('sha256').update(account.private_key).digest('base64url');
  return `${account.client_email}\0${tokenUrl}\0${keyHash}`;
}

/**
 * An access token for the service account: cached until shortly before it expires, and fetched once for all
 * requests that need it at the same moment.
 */
export async function accessToken(account: ServiceAccount, tokenUrlOption: string | undefined, dispatcher: Dispatcher = getGlobalDispatcher()): Promise<string> {
  const tokenUrl = tokenUrlOption ?? account.token_uri ?? DEFAULT_TOKEN_URL;
  const cacheKey = cacheKeyOf(account, tokenUrl);
  const cached = tokens.get(cacheKey);
  if (cached && cached.expiresAt - RENEW_MARGIN_MS > Date.now()) return cached.token;
  let inFlight = pending.get(cacheKey);
  if (!inFlight) {
    inFlight = fetchToken(account, tokenUrl, dispatcher).finally(() => pending.delete(cacheKey));
    pending.set(cacheKey, inFlight);
  }
  const fresh = await inFlight;
  tokens.set(cacheKey, fresh);
  return fresh.token;
}

/**
 * Drops the account's cached token if it is still `token` (Vertex refused it: revoked, or the key that got it
 * deleted, before its expiry). A token fetched since is kept, so requests refused together cause one fetch.
 */
export function forgetAccessToken(account: ServiceAccount, tokenUrlOption: string | undefined, token: string): void {
  const cacheKey = cacheKeyOf(account, tokenUrlOption ?? account.token_uri ?? DEFAULT_TOKEN_URL);
  if (tokens.get(cacheKey)?.token === token) tokens.delete(cacheKey);
}
