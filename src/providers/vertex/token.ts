import { createHash } from 'node:crypto';
import { getGlobalDispatcher, request, type Dispatcher } from 'undici';
import type { GatewayError } from '../../core/errors.js';
import type { ImpersonatedAccount, ServiceAccount, TokenCredential } from './credentials.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { proxyFailure } from '../../network/outbound-dispatcher.js';
import { metadataToken } from './metadata-server.js';

const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
export const DEFAULT_TOKEN_URL = 'https://oauth2.googleapis.com/token';
/** Tokens are renewed this long before they expire, so none expires in flight. */
const RENEW_MARGIN_MS = 5 * 60_000;

interface CachedToken {
  token: string;
  /** When a new one is fetched: the margin before expiry, or half the lifetime of a token handed out with less left. */
  renewAt: number;
}

/**
 * A metadata server hands out its cached token until a few minutes before it expires, so the lifetime may be shorter
 * than the usual margin: then the token is used for half of what is left, never fetched again for every request.
 */
function cachedFor(token: string, lifetimeMs: number): CachedToken {
  return { token, renewAt: Date.now() + lifetimeMs - Math.min(RENEW_MARGIN_MS, lifetimeMs / 2) };
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

/** A credential exchanged at an OAuth token endpoint. */
type OAuthCredential = Extract<TokenCredential, { kind: 'service-account' | 'authorized-user' }>;

/**
 * The token request's form: a service account's signed JWT assertion, or a user credential's refresh-token grant
 * (RFC 6749 section 6, as Google's auth libraries refresh `authorized_user` credentials).
 */
async function grantOf(credential: OAuthCredential, tokenUrl: string): Promise<Record<string, string>> {
  if (credential.kind === 'service-account') return { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: await assertion(credential.account, tokenUrl) };
  const { client_id, client_secret, refresh_token } = credential.user;
  return { grant_type: 'refresh_token', client_id, client_secret, refresh_token };
}

/** Why a token request got no answer, ending the sentence: the proxy's part in it (settings.network), else the error's code. */
function unreachedBecause(err: unknown): string {
  const viaProxy = proxyFailure(err);
  if (viaProxy !== null) return `(${viaProxy}); check settings.network (or HTTPS_PROXY, HTTP_PROXY, NO_PROXY).`;
  return `(${(err as { code?: string }).code ?? 'connection failed'}).`;
}

/** What the token endpoint's messages call the credential. */
function nameOf(credential: OAuthCredential): string {
  return credential.kind === 'service-account' ? 'service account' : 'user credential';
}

async function fetchOAuthToken(credential: OAuthCredential, tokenUrl: string, dispatcher: Dispatcher): Promise<CachedToken> {
  const body = new URLSearchParams(await grantOf(credential, tokenUrl)).toString();
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
    throw tokenError(`the token endpoint could not be reached ${unreachedBecause(err)}`, false);
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
    throw tokenError(`the token endpoint refused the ${nameOf(credential)}: ${detail}`, response.statusCode < 500);
  }
  const lifetime = typeof json.expires_in === 'number' ? json.expires_in * 1000 : 3_600_000;
  return cachedFor(json.access_token, lifetime);
}

/** What IAM Credentials said, fit to show: Google's `error.message`, else the status. */
function iamSaid(status: number, json: Record<string, unknown>): string {
  const error = json.error as { message?: unknown; status?: unknown } | undefined;
  const message = typeof error?.message === 'string' ? quoteInput(error.message, 300) : null;
  return message ? `${typeof error?.status === 'string' ? `${error.status}: ` : ''}${message}` : `HTTP ${status}`;
}

/**
 * The target account's token from IAM Credentials' generateAccessToken, asked with the source credential's token
 * (google-auth-library's Impersonated client: the cloud-platform scope, an hour). A 401 to the source's cached token
 * (revoked before its expiry) drops it, and the exchange is made once more with one fetched anew.
 */
async function fetchImpersonatedToken(account: ImpersonatedAccount, sourceTokenUrl: string | undefined, dispatcher: Dispatcher, retried = false): Promise<CachedToken> {
  const sourceToken = await accessToken(account.source, sourceTokenUrl, dispatcher);
  let response;
  try {
    response = await request(account.url, {
      dispatcher,
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${sourceToken}` },
      body: JSON.stringify({ delegates: account.delegates, scope: [SCOPE], lifetime: '3600s' }),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
  } catch (err) {
    throw tokenError(`IAM Credentials (generateAccessToken) could not be reached ${unreachedBecause(err)}`, false);
  }
  const text = await response.body.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Reported below with the status.
  }
  const expires = typeof json.expireTime === 'string' ? Date.parse(json.expireTime) : Number.NaN;
  if (response.statusCode !== 200 || typeof json.accessToken !== 'string') {
    if (response.statusCode === 401 && !retried) {
      forgetAccessToken(account.source, sourceTokenUrl, sourceToken);
      return fetchImpersonatedToken(account, sourceTokenUrl, dispatcher, true);
    }
    const target = /([^/]+):generateAccessToken$/.exec(account.url)?.[1] ?? 'the target service account';
    throw tokenError(`IAM Credentials refused to impersonate ${target}: ${iamSaid(response.statusCode, json)}`, response.statusCode < 500);
  }
  return cachedFor(json.accessToken, Number.isNaN(expires) ? 3_600_000 : expires - Date.now());
}

function fetchToken(credential: TokenCredential, tokenUrl: string, tokenUrlOption: string | undefined, dispatcher: Dispatcher): Promise<CachedToken> {
  if (credential.kind === 'metadata-server') return metadataToken(credential.baseUrl, credential.adcFile).then(({ token, lifetimeMs }) => cachedFor(token, lifetimeMs));
  if (credential.kind === 'impersonated') return fetchImpersonatedToken(credential.impersonated, tokenUrlOption, dispatcher);
  return fetchOAuthToken(credential, tokenUrl, dispatcher);
}

/**
 * Keyed on the secret too: client_email and client_id are not secret, so a key that names another account's email
 * (a client's x-tollgate-provider-key) must sign its own assertion, and a user credential bring its own refresh
 * token, never be handed the token cached for that account.
 */
function cacheKeyOf(credential: TokenCredential, tokenUrl: string): string {
  // The host's own identity: one token for every provider without a key.
  if (credential.kind === 'metadata-server') return `metadata-server\0${credential.baseUrl}`;
  // The target account's token, for this source credential only (its own secret).
  if (credential.kind === 'impersonated') return `impersonated\0${credential.impersonated.url}\0${credential.impersonated.delegates.join(',')}\0${cacheKeyOf(credential.impersonated.source, tokenUrl)}`;
  const [who, secret] = credential.kind === 'service-account' ? [credential.account.client_email, credential.account.private_key] : [credential.user.client_id, credential.user.refresh_token];
  const secretHash = createHash('sha256').update(secret).digest('base64url');
  return `${credential.kind}\0${who}\0${tokenUrl}\0${secretHash}`;
}

/** The token endpoint: the configured one, else the credential's own `token_uri`, else Google's. */
function tokenUrlOf(credential: TokenCredential, tokenUrlOption: string | undefined): string {
  // An impersonated account's source is exchanged at its token endpoint; the metadata server needs none.
  if (credential.kind === 'impersonated') return tokenUrlOf(credential.impersonated.source, tokenUrlOption);
  if (credential.kind === 'metadata-server') return '';
  const own = credential.kind === 'service-account' ? credential.account.token_uri : credential.user.token_uri;
  return tokenUrlOption ?? own ?? DEFAULT_TOKEN_URL;
}

/**
 * An access token for the service account, user credential, impersonated account or the metadata server's account:
 * cached until shortly before it expires, and fetched once for all requests that need it at the same moment.
 */
export async function accessToken(credential: TokenCredential, tokenUrlOption: string | undefined, dispatcher: Dispatcher = getGlobalDispatcher()): Promise<string> {
  const tokenUrl = tokenUrlOf(credential, tokenUrlOption);
  const cacheKey = cacheKeyOf(credential, tokenUrl);
  const cached = tokens.get(cacheKey);
  if (cached && cached.renewAt > Date.now()) return cached.token;
  let inFlight = pending.get(cacheKey);
  if (!inFlight) {
    inFlight = fetchToken(credential, tokenUrl, tokenUrlOption, dispatcher).finally(() => pending.delete(cacheKey));
    pending.set(cacheKey, inFlight);
  }
  const fresh = await inFlight;
  tokens.set(cacheKey, fresh);
  return fresh.token;
}

/**
 * Drops the credential's cached token if it is still `token` (Vertex refused it: revoked, or the key that got it
 * deleted, before its expiry). A token fetched since is kept, so requests refused together cause one fetch.
 */
export function forgetAccessToken(credential: TokenCredential, tokenUrlOption: string | undefined, token: string): void {
  const cacheKey = cacheKeyOf(credential, tokenUrlOf(credential, tokenUrlOption));
  if (tokens.get(cacheKey)?.token === token) tokens.delete(cacheKey);
}
