import { Agent, request } from 'undici';
import { gatewayError, type GatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';

/**
 * The Google Cloud metadata server (GCE, GKE with Workload Identity, Cloud Run, App Engine): it hands out access tokens
 * for the service account attached to the host, and names the host's project. Asked with `Metadata-Flavor: Google`,
 * which it requires and answers with (a server that does not is no metadata server).
 */

const DEFAULT_HOST = 'metadata.google.internal';
const SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
/** A host without a metadata server refuses, fails to resolve the name or drops the connection: it is given this long. */
export const CONNECT_TIMEOUT_MS = 1_000;
/** Once connected, the answer: GKE's metadata server may exchange a Workload Identity token first, which takes a moment. */
const ANSWER_TIMEOUT_MS = 5_000;
/** A metadata server that did not answer is the answer for this long: requests meanwhile fail at once instead of waiting. */
const FAILURE_HOLD_MS = 5_000;

/**
 * The metadata server is a link-local address only this host reaches: asked directly, never through the gateway's
 * outbound proxy, and with a short connect timeout so a gateway off Google Cloud fails at once.
 */
let directAgent: Agent | null = null;
function direct(): Agent {
  directAgent ??= new Agent({ connect: { timeout: CONNECT_TIMEOUT_MS } });
  return directAgent;
}

/** `http://{GCE_METADATA_HOST}/computeMetadata/v1`, as google-auth-library's gcp-metadata builds it (host[:port], or a URL). */
export function metadataBaseUrl(env: NodeJS.ProcessEnv = process.env): string {
  const host = env.GCE_METADATA_HOST?.trim() || DEFAULT_HOST;
  const origin = /^https?:\/\//.test(host) ? host.replace(/\/+$/, '') : `http://${host}`;
  return `${origin}/computeMetadata/v1`;
}

/** Why nothing answered, and whether anything was there at all (connection refused, unknown host, connect timeout). */
function unreachedReason(err: unknown, timedOut: boolean): { reason: string; absent: boolean } {
  const code = (err as { code?: string }).code ?? (err as { cause?: { code?: string } }).cause?.code;
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return { reason: `no connection within ${CONNECT_TIMEOUT_MS} ms`, absent: true };
  if (timedOut || code === 'UND_ERR_HEADERS_TIMEOUT') return { reason: `connected, but no answer within ${ANSWER_TIMEOUT_MS} ms`, absent: false };
  const message = err instanceof Error ? err.message : '';
  return { reason: code ?? (message !== '' ? quoteInput(message, 200) : 'connection failed'), absent: true };
}

/** Why the metadata server did not answer, kept so each caller's error names its own places looked at. */
const held = new Map<string, { cause: unknown; timedOut: boolean; until: number }>();

/** No metadata server answered: a 401 naming every place looked at (no key works), or a 502 for one that is slow. */
function unreached(baseUrl: string, adcFile: string | null, err: unknown, timedOut: boolean): GatewayError {
  const { reason, absent } = unreachedReason(err, timedOut);
  if (!absent) return gatewayError('provider_token_failed', `vertex: the Google Cloud metadata server at ${baseUrl} did not answer (${reason}).`);
  return gatewayError(
    'provider_key_missing',
    'vertex: no Google Cloud credentials: no key is configured (api_key, VERTEX_CREDENTIALS, GOOGLE_APPLICATION_CREDENTIALS), ' +
      `${adcFile ? `there is no gcloud Application Default Credentials file at ${adcFile}` : 'no gcloud configuration directory is known (HOME, CLOUDSDK_CONFIG)'}, ` +
      `and no metadata server answered at ${baseUrl} (${reason}). Configure a service-account key, run \`gcloud auth application-default login\`, ` +
      'or run tollgate on Google Cloud (GKE, Cloud Run, GCE) with a service account attached.',
  );
}

/** One GET to the metadata server: its status and body, or the error saying nothing answered. */
async function metadataGet(baseUrl: string, path: string, adcFile: string | null): Promise<{ status: number; text: string }> {
  const hold = held.get(baseUrl);
  if (hold && hold.until > Date.now()) throw unreached(baseUrl, adcFile, hold.cause, hold.timedOut);
  const signal = AbortSignal.timeout(CONNECT_TIMEOUT_MS + ANSWER_TIMEOUT_MS);
  let response;
  try {
    response = await request(`${baseUrl}${path}`, { dispatcher: direct(), method: 'GET', headers: { 'metadata-flavor': 'Google' }, headersTimeout: ANSWER_TIMEOUT_MS, bodyTimeout: ANSWER_TIMEOUT_MS, signal });
  } catch (err) {
    held.set(baseUrl, { cause: err, timedOut: signal.aborted, until: Date.now() + FAILURE_HOLD_MS });
    throw unreached(baseUrl, adcFile, err, signal.aborted);
  }
  held.delete(baseUrl);
  const text = await response.body.text().catch(() => '');
  if (response.headers['metadata-flavor'] !== 'Google') {
    throw gatewayError('provider_token_failed', `vertex: ${baseUrl} answered without \`Metadata-Flavor: Google\` (HTTP ${response.statusCode}): it is no Google Cloud metadata server.`);
  }
  return { status: response.statusCode, text };
}

/** The attached service account's access token and when it expires. */
export async function metadataToken(baseUrl: string, adcFile: string | null): Promise<{ token: string; lifetimeMs: number }> {
  const path = `/instance/service-accounts/default/token?scopes=${encodeURIComponent(SCOPE)}`;
  const { status, text } = await metadataGet(baseUrl, path, adcFile);
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // Reported below with the status.
  }
  if (status !== 200 || typeof json.access_token !== 'string' || json.access_token === '') {
    // 404: no service account is attached to the instance (or the pod's Kubernetes service account is bound to none).
    const detail = status === 404 ? 'HTTP 404: no service account is attached to this instance or pod' : `HTTP ${status}${text ? `: ${quoteInput(text, 200)}` : ''}`;
    throw gatewayError(status >= 500 ? 'provider_token_failed' : 'provider_token_refused', `vertex: the Google Cloud metadata server at ${baseUrl} gave no access token (${detail}).`);
  }
  const lifetimeMs = typeof json.expires_in === 'number' && json.expires_in > 0 ? json.expires_in * 1000 : 3_600_000;
  return { token: json.access_token, lifetimeMs };
}

const projects = new Map<string, string>();

/** The host's project id, asked once per metadata server (it never changes for a host). */
export async function metadataProject(baseUrl: string, adcFile: string | null): Promise<string | null> {
  const known = projects.get(baseUrl);
  if (known) return known;
  const { status, text } = await metadataGet(baseUrl, '/project/project-id', adcFile);
  const project = text.trim();
  if (status !== 200 || project === '') return null;
  projects.set(baseUrl, project);
  return project;
}

/**
 * The host's project id for a credential that names none, or null: as google-auth-library's getGCEProjectId, every
 * failure (no metadata server, a slow one, no project) is no project, never an error of its own.
 */
export async function metadataProjectIfAny(baseUrl: string): Promise<string | null> {
  try {
    return await metadataProject(baseUrl, null);
  } catch {
    return null;
  }
}
