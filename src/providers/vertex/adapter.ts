import type { Dispatcher } from 'undici';
import type { ChatCompletionRequest, NativeRequest } from '../../core/canonical.js';
import { anthropicError, completionOf, createAnthropicStreamDecoder, defaultMaxTokens, messagesBody } from '../anthropic/index.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import { completionFromGemini, createGeminiStreamDecoder, geminiError, toGeminiRequest } from '../gemini/index.js';
import { vertexCredential, type VertexCredential } from './credentials.js';
import { accessToken, DEFAULT_TOKEN_URL, forgetAccessToken } from './token.js';
import { defaultCredential, knownDefaultCredential } from './adc.js';
import { metadataBaseUrl, metadataProjectIfAny } from './metadata-server.js';
import { jsonHeaders as headers } from '../upstream-request.js';
import { pathSegment, unsafeModelName } from '../../path-segment.js';
import { gatewayError, type GatewayError } from '../../core/errors.js';
import { withFields } from '../../core/with-fields.js';
import { ANTHROPIC_VERTEX_VERSION, vertexMessagesBody } from './native.js';

const DEFAULT_LOCATION = 'us-central1';

/** Claude models live under the `anthropic` publisher; everything else is Google's. */
function isAnthropic(model: string): boolean {
  return model.startsWith('claude');
}

function location(target: Target): string {
  return target.provider.options.region ?? DEFAULT_LOCATION;
}

function baseUrl(target: Target): string {
  const where = location(target);
  const base = target.provider.baseUrl.replace(/\/+$/, '');
  // The global location has no regional host.
  if (base.includes('{region}')) return where === 'global' ? base.replace('{region}-', '') : base.replace('{region}', where);
  return base;
}

/**
 * The project a user credential (or an impersonated account's file) bills quota to: gcloud's current project when it
 * wrote the file. A service account's token bills its own project.
 */
function quotaProjectOf(credential: VertexCredential): string | undefined {
  if (credential.kind === 'authorized-user') return credential.user.quota_project_id;
  if (credential.kind === 'impersonated') return credential.impersonated.quota_project_id;
  return undefined;
}

/** The project a credential names: a service account's own, else the quota project of a user's or impersonated one. */
function projectOf(credential: VertexCredential): string | undefined {
  if (credential.kind === 'service-account') return credential.account.project_id;
  if (credential.kind === 'impersonated') return credential.impersonated.quota_project_id ?? projectOf(credential.impersonated.source);
  return quotaProjectOf(credential);
}

/**
 * Stands in the URL for the project when neither the config nor the credential names one: it is looked up once the
 * credential is (`authorize`). Not a possible project id (those have no `_`).
 */
const ADC_PROJECT = '__adc_project__';

/** Where a project may be configured: the provider's `project`, and for the provider named `vertex` its environment variables. */
function projectSettings(target: Target): string[] {
  const { name, vendor } = target.provider;
  return [`providers.${name}.project`, ...(name === vendor.id ? (vendor.projectEnv ?? []) : [])];
}

/** No project anywhere: a 400 (in the route's shape) naming each place looked at and what to set. */
function noProject(target: Target, credentialSays: string): GatewayError {
  const settings = projectSettings(target);
  const unset = settings.length === 1 ? `${settings[0]} is not set` : `${settings.slice(0, -1).join(', ')} and ${settings.at(-1)} are not set`;
  return gatewayError('provider_misconfigured', `vertex: no Google Cloud project: ${unset}, ${credentialSays}. Set ${settings.slice(0, 2).join(' or ')}.`, { param: 'model' });
}

/** The project a client's own key names: never the gateway host's (the metadata server's) for a client's credential. */
function clientProject(target: Target, apiKey: string): string {
  const named = projectOf(vertexCredential(apiKey, true));
  if (named) return named;
  throw noProject(target, 'and the key names none (project_id, quota_project_id)');
}

/**
 * The project for the URL, in google-auth-library's order (getProjectId): the configured one (which the provider
 * named `vertex` takes from GOOGLE_CLOUD_PROJECT, then GCLOUD_PROJECT, when the config names none), else the
 * credential's (a service account's project_id, a user or impersonated credential's quota_project_id), else the
 * metadata server's, looked up in `authorize`.
 */
function project(target: Target): string {
  if (target.provider.options.project) return target.provider.options.project;
  if (target.apiKey && target.keySource === 'client') return clientProject(target, target.apiKey);
  return (target.apiKey ? projectOf(vertexCredential(target.apiKey)) : undefined) ?? ADC_PROJECT;
}

/**
 * The project of an operator's credential that names none: the host's, from the metadata server (the one the
 * credential came from, else GCE_METADATA_HOST's), as google-auth-library's last resort.
 */
async function discoveredProject(credential: VertexCredential, target: Target): Promise<string> {
  const named = projectOf(credential);
  if (named) return named;
  const baseUrl = credential.kind === 'metadata-server' ? credential.baseUrl : metadataBaseUrl();
  const fromHost = await metadataProjectIfAny(baseUrl);
  if (fromHost) return fromHost;
  const credentialSays = credential.kind === 'metadata-server' ? '' : 'the credential names none (project_id, quota_project_id), ';
  throw noProject(target, `${credentialSays}and the metadata server at ${baseUrl} named none or did not answer`);
}

/** A target's credential: its key, else Application Default Credentials (gcloud's file, the metadata server). */
function credentialOf(target: Target): Promise<VertexCredential> {
  return target.apiKey ? Promise.resolve(vertexCredential(target.apiKey, target.keySource === 'client')) : defaultCredential();
}

/**
 * `.../projects/P/locations/L/publishers/X/models/M:method`. The model is one segment (the publisher is chosen
 * from it), so a `/` in it is refused like `..`, `?` or `#`: none may reach another path with the service account's token.
 */
/**
 * Model Garden's partner and open models (Meta's Llama, Mistral AI, AI21's Jamba, DeepSeek, Qwen, OpenAI's gpt-oss)
 * live under their own publishers and answer on rawPredict or the OpenAI-compatible `endpoints/openapi` endpoint in
 * their own body formats; sent to publishers/google's generateContent they would only meet a 404.
 */
const PARTNER_MODEL = /^(?:llama|meta-|mistral|codestral|ministral|jamba|deepseek|qwen|gpt-oss|kimi|minimax)/i;

function modelUrl(target: Target, method: string): string {
  if (PARTNER_MODEL.test(target.model)) {
    throw gatewayError(
      'unsupported_for_provider',
      `vertex: '${target.model}' is a Model Garden partner model; this provider serves Gemini (publishers/google) and Claude (publishers/anthropic) models only.`,
      { param: 'model' },
    );
  }
  const publisher = isAnthropic(target.model) ? 'anthropic' : 'google';
  const model = pathSegment(target.model, 'Vertex AI');
  if (target.model.includes('/')) {
    throw unsafeModelName(target.model, "holds '/' (Vertex model names are one id, such as gemini-2.5-flash or claude-sonnet-4-5@20250929)", 'Vertex AI');
  }
  return `${baseUrl(target)}/projects/${encodeURIComponent(project(target))}/locations/${encodeURIComponent(location(target))}/publishers/${publisher}/models/${model}:${method}`;
}


/** Errors come in Anthropic's shape from Claude models and in Google's from everything else (auth included). */
function isAnthropicErrorBody(bodyText: string): boolean {
  try {
    return (JSON.parse(bodyText) as { type?: unknown }).type === 'error';
  } catch {
    return false;
  }
}

/**
 * The token endpoint a target's service account is exchanged at. A client's own service account is exchanged only at
 * the configured or Google's token endpoint, never at the `token_uri` it names: that would let any client make the
 * gateway POST to an address of its choice (an internal service, a metadata endpoint) and read the answer back in the error.
 */
function tokenUrlOf(target: Target): string | undefined {
  return target.provider.options.tokenUrl ?? (target.keySource === 'client' ? DEFAULT_TOKEN_URL : undefined);
}

/**
 * Vertex AI: Gemini bodies (generateContent / streamGenerateContent?alt=sse) and Anthropic Messages bodies
 * (rawPredict / streamRawPredict) on Google Cloud URLs, authorised with an OAuth token from the provider's key, or
 * without one from Application Default Credentials (gcloud's file, the metadata server; see adc.ts).
 */
export const vertexAdapter: ProviderAdapter = {
  format: 'vertex',

  // Claude's rawPredict takes Anthropic's Messages body and answers in Anthropic's format: an Anthropic client's own
  // body goes through (native pass-through), as to Anthropic's API.
  nativeFormat: (target: Target) => (isAnthropic(target.model) ? 'anthropic' : 'vertex'),

  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest {
    const stream = request.stream === true;
    if (isAnthropic(target.model)) {
      let body: Record<string, unknown>;
      if (native) body = vertexMessagesBody(native);
      else {
        const { model: _model, ...translated } = messagesBody(request, target.model);
        body = { anthropic_version: ANTHROPIC_VERTEX_VERSION, ...translated };
      }
      return {
        method: 'POST',
        url: modelUrl(target, stream ? 'streamRawPredict' : 'rawPredict'),
        headers: headers(target),
        body: JSON.stringify(body),
      };
    }
    return {
      method: 'POST',
      url: modelUrl(target, stream ? 'streamGenerateContent?alt=sse' : 'generateContent'),
      headers: headers(target),
      body: JSON.stringify(toGeminiRequest(request, target.model)),
    };
  },

  async authorize(request: UpstreamRequest, target: Target, dispatcher?: Dispatcher): Promise<UpstreamRequest> {
    const credential = await credentialOf(target);
    const token = credential.kind === 'access-token' ? credential.token : await accessToken(credential, tokenUrlOf(target), dispatcher);
    const marker = `/projects/${ADC_PROJECT}/`;
    const url = request.url.includes(marker) ? request.url.replace(marker, `/projects/${encodeURIComponent(await discoveredProject(credential, target))}/`) : request.url;
    // A user's token is charged to no project of its own: Google's APIs refuse it (403, "requires a quota project")
    // unless the request names one, which Google's auth libraries do from the credential's quota_project_id.
    // An operator's own x-goog-user-project header (another billing project) wins.
    const quota = quotaProjectOf(credential);
    const named = Object.keys(request.headers).some((name) => name.toLowerCase() === 'x-goog-user-project');
    const billed = quota !== undefined && !named ? { 'x-goog-user-project': quota } : {};
    return { ...request, url, headers: withFields(request.headers, { ...billed, authorization: `Bearer ${token}` }) };
  },

  /**
   * Vertex's 401 (UNAUTHENTICATED) to a cached token (a service account's, a user credential's, an impersonated
   * account's, the metadata server's): revoked, or its key
   * deleted, before it expired. The token is dropped and one fetched anew. A 403 (PERMISSION_DENIED) is the account's permissions, which a new
   * token keeps; a ready access token has nothing to fetch again.
   */
  forgetCredential(request: UpstreamRequest, target: Target, error: GatewayError): boolean {
    if (error.upstreamStatus !== 401) return false;
    const credential = target.apiKey ? vertexCredential(target.apiKey, target.keySource === 'client') : knownDefaultCredential();
    const token = request.headers.authorization?.replace(/^Bearer /, '');
    if (!credential || credential.kind === 'access-token' || !token) return false;
    forgetAccessToken(credential, tokenUrlOf(target), token);
    return true;
  },

  // Claude's rawPredict takes Anthropic's Messages body, which requires max_tokens.
  defaultOutputLimit: (target: Target, request: ChatCompletionRequest) => (isAnthropic(target.model) ? defaultMaxTokens(request) : null),

  parseChatResponse(body, target) {
    return isAnthropic(target.model) ? completionOf(body, target.provider.name) : completionFromGemini(body, target.model, target.provider.name);
  },

  createStreamDecoder(target, request, native) {
    return isAnthropic(target.model)
      ? createAnthropicStreamDecoder(target.provider.name, request, { keepEvents: native !== undefined && native !== null })
      : createGeminiStreamDecoder(target.model, target.provider.name, request.stream_options?.include_usage === true);
  },

  parseError(status, responseHeaders, bodyText, target) {
    return isAnthropicErrorBody(bodyText)
      ? anthropicError(target.provider.name, status, responseHeaders, bodyText)
      : geminiError(target.provider.name, status, responseHeaders, bodyText);
  },
};
