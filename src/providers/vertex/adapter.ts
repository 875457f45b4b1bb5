import type { Dispatcher } from 'undici';
import type { ChatCompletionRequest, NativeRequest } from '../../core/canonical.js';
import { anthropicError, completionOf, createAnthropicStreamDecoder, defaultMaxTokens, messagesBody } from '../anthropic/index.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import { completionFromGemini, createGeminiStreamDecoder, geminiError, toGeminiRequest } from '../gemini/index.js';
import { vertexCredential } from './credentials.js';
import { accessToken, DEFAULT_TOKEN_URL, forgetAccessToken } from './token.js';
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

/** The project a user credential bills quota to (gcloud's current project when it wrote the file). */
function quotaProject(target: Target): string | undefined {
  const credential = target.apiKey ? vertexCredential(target.apiKey, target.keySource === 'client') : null;
  return credential?.kind === 'authorized-user' ? credential.user.quota_project_id : undefined;
}

function project(target: Target): string {
  if (target.provider.options.project) return target.provider.options.project;
  const credential = target.apiKey ? vertexCredential(target.apiKey, target.keySource === 'client') : null;
  const fromAccount = credential?.kind === 'service-account' ? credential.account.project_id : quotaProject(target);
  if (fromAccount) return fromAccount;
  throw gatewayError('provider_misconfigured', `vertex: no project configured; set providers.${target.provider.name}.project.`, { param: 'model' });
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
 * (rawPredict / streamRawPredict) on Google Cloud URLs, authorised with an OAuth token from the service account.
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
    if (!target.apiKey) throw gatewayError('provider_key_missing', 'vertex: no service account configured.');
    const credential = vertexCredential(target.apiKey, target.keySource === 'client');
    const token = credential.kind === 'access-token' ? credential.token : await accessToken(credential, tokenUrlOf(target), dispatcher);
    // A user's token is charged to no project of its own: Google's APIs refuse it (403, "requires a quota project")
    // unless the request names one, which Google's auth libraries do from the credential's quota_project_id.
    // An operator's own x-goog-user-project header (another billing project) wins.
    const quota = quotaProject(target);
    const named = Object.keys(request.headers).some((name) => name.toLowerCase() === 'x-goog-user-project');
    const billed = quota !== undefined && !named ? { 'x-goog-user-project': quota } : {};
    return { ...request, headers: withFields(request.headers, { ...billed, authorization: `Bearer ${token}` }) };
  },

  /**
   * Vertex's 401 (UNAUTHENTICATED) to a service account's or user credential's cached token: revoked, or its key
   * deleted, before it expired. The token is dropped and one fetched anew. A 403 (PERMISSION_DENIED) is the account's permissions, which a new
   * token keeps; a ready access token has nothing to fetch again.
   */
  forgetCredential(request: UpstreamRequest, target: Target, error: GatewayError): boolean {
    if (error.upstreamStatus !== 401 || !target.apiKey) return false;
    const credential = vertexCredential(target.apiKey, target.keySource === 'client');
    const token = request.headers.authorization?.replace(/^Bearer /, '');
    if (credential.kind === 'access-token' || !token) return false;
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
