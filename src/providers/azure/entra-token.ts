import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Agent, getGlobalDispatcher, request, type Dispatcher } from 'undici';
import type { EntraCredential } from '../../core/provider.js';
import { gatewayError, type GatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { isProxyHopError } from '../../network/outbound-dispatcher.js';
import { certificateAssertion, readCertificateCredential } from './client-assertion.js';

/** Azure's instance metadata service: the managed identity of a VM, a scale set or an AKS node. */
export const IMDS_TOKEN_URL = 'http://169.254.169.254/metadata/identity/oauth2/token';
/** A token is renewed this long before it expires (or at half its life when that is sooner), so none expires in flight. */
const RENEW_MARGIN_MS = 5 * 60_000;
/** Assumed when the token endpoint says nothing of the lifetime (Entra's tokens live 60 to 90 minutes). */
const DEFAULT_LIFETIME_MS = 3_600_000;

/**
 * A token in hand is still sent while its renewal is under way or has failed, up to this long before it expires (Azure
 * checks expiry with clock skew in mind, and a request takes time to reach it).
 */
const USABLE_MARGIN_MS = 60_000;
/** After a renewal failed, the next one is tried no sooner than this (Azure's own SDKs wait 3 s), not once per request. */
const RENEW_RETRY_MS = 3_000;

/**
 * How a managed-identity token is asked for: straight to the endpoint, never through the gateway's proxy. Microsoft
 * requires IMDS (a link-local address only the VM itself reaches) to be called without a proxy, and App Service's
 * IDENTITY_ENDPOINT is on the host's loopback; a company proxy reaches neither. Connecting is bounded short, so a host
 * without IMDS fails at once instead of holding requests for the whole token timeout.
 */
let managedIdentityAgent: Agent | null = null;
function directToHost(): Agent {
  managedIdentityAgent ??= new Agent({ connect: { timeout: 2_000 } });
  return managedIdentityAgent;
}

interface CachedToken {
  token: string;
  /** When it is renewed: before its expiry by the margin above, or when Entra's `refresh_in` says. */
  renewAt: number;
  /** When it can no longer be sent (its expiry less USABLE_MARGIN_MS). */
  usableUntil: number;
  /** No renewal starts before this (set when one failed). */
  retryAt: number;
}

const tokens = new Map<string, CachedToken>();
const pending = new Map<string, Promise<CachedToken>>();
const cacheKeys = new WeakMap<EntraCredential, string>();

/** The identity a token belongs to: a credential object lives as long as its config version, so this is computed once. */
function cacheKey(credential: EntraCredential): string {
  let key = cacheKeys.get(credential);
  if (key === undefined) {
    const parts: string[] = [credential.kind, credential.scope];
    if (credential.kind === 'managed_identity') {
      parts.push(credential.clientId ?? '', credential.userAssigned?.by ?? '', credential.userAssigned?.id ?? '', credential.identityEndpoint ?? IMDS_TOKEN_URL);
    }
    else parts.push(credential.authorityHost, credential.tenantId, credential.clientId);
    // The secret itself is never a map key (a heap dump would show it); its digest tells two secrets apart.
    if (credential.kind === 'client_secret') parts.push(createHash('sha256').update(credential.clientSecret).digest('base64url'));
    if (credential.kind === 'workload_identity') parts.push(credential.tokenFile);
    if (credential.kind === 'client_certificate') parts.push(credential.certificateFile);
    key = parts.join('\0');
    cacheKeys.set(credential, key);
  }
  return key;
}

/** Who is asking, for error messages: the method and the identity's id, never a secret. */
function describe(credential: EntraCredential): string {
  const method = credential.kind.replace('_', ' ');
  if (credential.kind === 'managed_identity' && credential.userAssigned) return `${method} of ${credential.userAssigned.by.replace('_', ' ')} ${credential.userAssigned.id}`;
  return credential.clientId ? `${method} of client ${credential.clientId}` : method;
}

/**
 * The query parameter naming a user-assigned identity: client_id, object_id, or the resource id, which IMDS
 * documents as msi_res_id and App Service (2019-08-01) as mi_res_id (as Microsoft's MSAL sends them).
 */
function userAssignedParam(credential: Extract<EntraCredential, { kind: 'managed_identity' }>, imds: boolean): Record<string, string> {
  if (credential.userAssigned?.by === 'resource_id') return { [imds ? 'msi_res_id' : 'mi_res_id']: credential.userAssigned.id };
  if (credential.userAssigned?.by === 'object_id') return { object_id: credential.userAssigned.id };
  return credential.clientId ? { client_id: credential.clientId } : {};
}

export interface TokenRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** The resource a managed-identity token is asked for: the scope without `/.default`. */
function resourceOf(scope: string): string {
  return scope.replace(/\/\.default$/, '');
}

/** The AKS workload identity's federated token, from its file. */
async function federatedAssertion(credential: Extract<EntraCredential, { kind: 'workload_identity' }>, fail: (message: string) => GatewayError): Promise<string> {
  let assertion: string;
  try {
    assertion = (await readFile(credential.tokenFile, 'utf8')).trim();
  } catch (err) {
    throw fail(`cannot read the federated token file ${credential.tokenFile} (${(err as { code?: string }).code ?? 'read failed'}).`);
  }
  if (assertion === '') throw fail(`the federated token file ${credential.tokenFile} is empty.`);
  return assertion;
}

/** An assertion signed with the app's certificate, its PEM file read now (a certificate renewed in place is used). */
async function signedAssertion(credential: Extract<EntraCredential, { kind: 'client_certificate' }>, tokenUrl: string, fail: (message: string) => GatewayError): Promise<string> {
  let pem: string;
  try {
    pem = await readFile(credential.certificateFile, 'utf8');
  } catch (err) {
    throw fail(`cannot read the certificate file ${credential.certificateFile} (${(err as { code?: string }).code ?? 'read failed'}).`);
  }
  try {
    return certificateAssertion(readCertificateCredential(pem), credential.clientId, tokenUrl);
  } catch (err) {
    throw fail(`the certificate file ${credential.certificateFile} cannot sign: ${(err as Error).message}.`);
  }
}

/**
 * The request that gets a token for the credential. The workload identity's assertion and the certificate are read
 * from their files each time: the kubelet rotates the one (hourly), a renewal replaces the other.
 */
export async function tokenRequest(credential: EntraCredential, fail: (message: string) => GatewayError): Promise<TokenRequest> {
  if (credential.kind === 'managed_identity') {
    const query = new URLSearchParams({ resource: resourceOf(credential.scope), ...userAssignedParam(credential, credential.identityEndpoint === null) });
    if (credential.identityEndpoint !== null) {
      // App Service and Functions: their own endpoint and header, under their API version.
      query.set('api-version', '2019-08-01');
      return { method: 'GET', url: `${credential.identityEndpoint}?${query}`, headers: { 'x-identity-header': credential.identityHeader ?? '' } };
    }
    query.set('api-version', '2018-02-01');
    return { method: 'GET', url: `${IMDS_TOKEN_URL}?${query}`, headers: { metadata: 'true' } };
  }
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: credential.clientId, scope: credential.scope });
  const url = `${credential.authorityHost.replace(/\/+$/, '')}/${encodeURIComponent(credential.tenantId)}/oauth2/v2.0/token`;
  if (credential.kind === 'client_secret') form.set('client_secret', credential.clientSecret);
  else {
    form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    form.set('client_assertion', credential.kind === 'client_certificate' ? await signedAssertion(credential, url, fail) : await federatedAssertion(credential, fail));
  }
  return { method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() };
}

/** A number the endpoint may send as a JSON number or a numeric string (IMDS and App Service send strings). */
function seconds(value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  return Number.isFinite(n) && n > 0 ? n : null;
}

/** A token the endpoint answered with, timed by Entra's `expires_in`, or `expires_on` (managed identity), and `refresh_in`. */
function cachedToken(token: string, json: Record<string, unknown>, now: number): CachedToken {
  const expiresIn = seconds(json.expires_in);
  const expiresOn = seconds(json.expires_on);
  const lifetime = expiresIn !== null ? expiresIn * 1000 : expiresOn !== null ? expiresOn * 1000 - now : DEFAULT_LIFETIME_MS;
  const refreshIn = seconds(json.refresh_in);
  const renew = lifetime - Math.min(RENEW_MARGIN_MS, lifetime / 2);
  return { token, renewAt: now + (refreshIn !== null ? Math.min(refreshIn * 1000, renew) : renew), usableUntil: now + lifetime - USABLE_MARGIN_MS, retryAt: 0 };
}

/**
 * Why no answer came. Told by the request's own timer, not the error's name: undici names a proxy's refusal of the
 * tunnel (a 407, or a 502 for a host it cannot reach) an AbortError too, which is no timeout.
 */
function unreached(err: unknown, timedOut: boolean, endpoint: string, timeoutMs: number): string {
  if (timedOut) return `the token endpoint ${endpoint} did not answer within ${timeoutMs} ms.`;
  const message = err instanceof Error ? err.message : '';
  if (message.startsWith('Proxy response')) return `the proxy refused the tunnel to ${endpoint} (${quoteInput(message, 200)}); check settings.network (or HTTPS_PROXY, HTTP_PROXY, NO_PROXY).`;
  const code = (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code;
  const detail = code === 'UND_ERR_CONNECT_TIMEOUT' ? 'connect timeout' : (code ?? (message !== '' ? quoteInput(message, 200) : 'connection failed'));
  if (isProxyHopError(err)) return `the proxy could not be reached for the token endpoint ${endpoint} (${detail}); check settings.network (or HTTPS_PROXY, HTTP_PROXY, NO_PROXY).`;
  return `the token endpoint ${endpoint} could not be reached (${detail}).`;
}

async function fetchToken(credential: EntraCredential, provider: string, dispatcher: Dispatcher, timeoutMs: number): Promise<CachedToken> {
  const who = describe(credential);
  const fail = (message: string): GatewayError => gatewayError('provider_token_failed', `${provider}: Microsoft Entra ID token (${who}): ${message}`);
  const secret = credential.kind === 'client_secret' ? credential.clientSecret : null;
  // Nothing the endpoint says is quoted with the secret in it (some echo the request in their errors).
  const clean = (text: string): string => (secret && secret.length >= 4 ? text.replaceAll(secret, '[REDACTED]') : text);
  const call = await tokenRequest(credential, fail);
  const endpoint = call.url.replace(/\?.*$/, '');
  let response;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    response = await request(call.url, {
      dispatcher: credential.kind === 'managed_identity' ? directToHost() : dispatcher,
      method: call.method,
      headers: call.headers,
      ...(call.body !== undefined ? { body: call.body } : {}),
      signal,
    });
  } catch (err) {
    throw fail(unreached(err, signal.aborted, endpoint, timeoutMs));
  }
  let text: string;
  try {
    text = await response.body.text();
  } catch {
    throw fail(`the token endpoint ${endpoint} did not finish its answer within ${timeoutMs} ms.`);
  }
  let json: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object') json = parsed as Record<string, unknown>;
  } catch {
    // Reported below with the status.
  }
  if (response.statusCode !== 200 || typeof json.access_token !== 'string' || json.access_token === '') {
    const said = typeof json.error_description === 'string' ? json.error_description : typeof json.error === 'string' ? json.error : typeof json.message === 'string' ? json.message : null;
    const detail = said === null ? `HTTP ${response.statusCode}` : `HTTP ${response.statusCode}: ${quoteInput(clean(said), 300)}`;
    throw fail(`the token endpoint ${endpoint} gave no token (${detail}).`);
  }
  return cachedToken(json.access_token, json, Date.now());
}

/** The identity's one token fetch in flight, started if there is none. */
function fetchOnce(key: string, credential: EntraCredential, provider: string, dispatcher: Dispatcher, timeoutMs: number): Promise<CachedToken> {
  let inFlight = pending.get(key);
  if (!inFlight) {
    inFlight = fetchToken(credential, provider, dispatcher, timeoutMs)
      .then((fresh) => {
        tokens.set(key, fresh);
        return fresh;
      })
      .finally(() => pending.delete(key));
    pending.set(key, inFlight);
  }
  return inFlight;
}

/**
 * A bearer token for the identity: cached until shortly before it expires, and fetched once for all requests that
 * need it at the same moment. Fetched over `dispatcher`, the gateway's outbound network (proxy and CAs).
 *
 * A token due for renewal but not yet expired is still sent while it is renewed in the background, as Azure's SDKs
 * do: a token endpoint that is down or slow at renewal time (for up to the five minutes left, or the hours a
 * `refresh_in` leaves) fails no request, and a failed renewal is tried again after RENEW_RETRY_MS.
 */
export async function entraToken(credential: EntraCredential, provider: string, dispatcher: Dispatcher = getGlobalDispatcher(), timeoutMs = 10_000): Promise<string> {
  const key = cacheKey(credential);
  const cached = tokens.get(key);
  const now = Date.now();
  if (cached && cached.renewAt > now) return cached.token;
  if (cached && cached.usableUntil > now) {
    if (cached.retryAt <= now && !pending.has(key)) {
      fetchOnce(key, credential, provider, dispatcher, timeoutMs).catch(() => {
        // The token in hand goes on being sent; the next request after the pause tries again.
        if (tokens.get(key) === cached) cached.retryAt = Date.now() + RENEW_RETRY_MS;
      });
    }
    return cached.token;
  }
  return (await fetchOnce(key, credential, provider, dispatcher, timeoutMs)).token;
}

/** Drops the identity's cached token if it is still `token` (Azure refused it); a newer one fetched since is kept. */
export function forgetEntraToken(credential: EntraCredential, token: string): void {
  const key = cacheKey(credential);
  if (tokens.get(key)?.token === token) tokens.delete(key);
}
