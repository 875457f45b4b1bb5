import type { ChatCompletionChunk, ChatCompletionRequest, EmbeddingsRequest, NativeRequest, NativeStreamEvent } from '../../core/canonical.js';
import type { Dispatcher } from 'undici';
import type { ProviderAdapter, StreamDecoder, Target, UpstreamRequest } from '../../core/provider.js';
import { openAICompatibleAdapter } from '../openai-compatible/adapter.js';
import { pathSegment } from '../../path-segment.js';
import { gatewayError, type GatewayError } from '../../core/errors.js';
import { entraToken, forgetEntraToken } from './entra-token.js';
import { createResponsesDecoder, RESPONSES_FORMAT, responseCompletion, responsesRequest } from '../openai-compatible/responses.js';
import { COMPACT_FORMAT, compactionCompletion, compactionRequest } from '../openai-compatible/compaction.js';

/**
 * Azure OpenAI and Azure AI Foundry speak OpenAI's body, answers, stream and errors; only the URL differs
 * (deployment path and `api-version` query) and the key goes in `api-key`, or a Microsoft Entra ID token in
 * `Authorization` (see authorize). Everything else is delegated to the OpenAI adapter.
 */

/** Longest wait for an Entra token: the provider's own first-byte bound when shorter. */
const TOKEN_TIMEOUT_MS = 10_000;

/** The Entra identity that authorises calls to `target`; none for key auth, or when a client sent its own key. */
function entraOf(target: Target) {
  return target.keySource === 'client' ? undefined : target.provider.options.entra;
}

/**
 * The model inference API's version when the operator names none. Azure OpenAI has none: without an api_version it
 * is called at its v1 API (see usesV1), which Azure documents as the one to use (GA since August 2025) and which takes
 * today's fields; the last dated GA version (2024-10-21) refuses reasoning_effort, which o-series and gpt-5 need.
 */
const FOUNDRY_API_VERSION = '2024-05-01-preview';

function endpoint(target: Target): string {
  const base = target.provider.baseUrl.replace(/\/+$/, '');
  if (base.includes('{resource}')) {
    const env = target.provider.vendor.baseUrlEnv[0];
    throw gatewayError('provider_endpoint_missing', `${target.provider.name}: no endpoint is configured; set providers.${target.provider.name}.base_url${env ? ` or ${env}` : ''} to your resource's endpoint.`);
  }
  return base;
}

/** `https://x.openai.azure.com` and `https://x.openai.azure.com/openai` both mean the resource's `/openai` root. */
function openAIRoot(base: string): string {
  return /\/openai$/i.test(base) ? base : `${base}/openai`;
}

/**
 * Azure OpenAI's v1 API (`{endpoint}/openai/v1/`, as the OpenAI SDK's base URL): OpenAI's own paths, the deployment
 * name as the body's `model`, and no dated `api-version` (only `preview` or `latest` may be named).
 */
function isV1(base: string): boolean {
  return /\/openai\/v1$/i.test(base);
}

/** Azure OpenAI at its v1 API: a base URL that names it, or no dated api_version (config or environment) to keep. */
function usesV1(target: Target, base: string): boolean {
  if (target.provider.vendor.id !== 'azure') return false;
  const configured = target.provider.options.apiVersion;
  return isV1(base) || configured === undefined || configured === 'preview' || configured === 'latest';
}

export function azureUrl(target: Target, operation: 'chat/completions' | 'embeddings' | 'responses' | 'responses/compact'): string {
  const vendor = target.provider.vendor.id;
  const base = endpoint(target);
  if (usesV1(target, base)) {
    const configured = target.provider.options.apiVersion;
    const named = configured === 'preview' || configured === 'latest' ? `?api-version=${configured}` : '';
    return `${isV1(base) ? base : `${openAIRoot(base)}/v1`}/${operation}${named}`;
  }
  const version = encodeURIComponent(target.provider.options.apiVersion ?? FOUNDRY_API_VERSION);
  if (vendor === 'azure-ai') return `${base}/${operation}?api-version=${version}`;
  // Azure OpenAI: the model part of `azure/<name>` is the deployment name.
  return `${openAIRoot(base)}/deployments/${pathSegment(target.model, 'Azure OpenAI')}/${operation}?api-version=${version}`;
}

/** Azure opens a stream with a chunk that only carries prompt_filter_results (no choices, no usage). */
function isFilterOnly(chunk: ChatCompletionChunk): boolean {
  return chunk.choices.length === 0 && !chunk.usage;
}

/**
 * The decoder without those chunks. When it keeps each chunk's own event (the client reads OpenAI's format), the
 * events of the dropped chunks are dropped with them, so each kept event still belongs to its chunk.
 */
function withoutFilterChunks(decoder: StreamDecoder): StreamDecoder {
  const takeInner = decoder.nativePerChunk ? decoder.takeNative?.bind(decoder) : undefined;
  let kept: NativeStreamEvent[] = [];
  const keep = (chunks: ChatCompletionChunk[]): ChatCompletionChunk[] => {
    const events = takeInner ? takeInner() : [];
    const out: ChatCompletionChunk[] = [];
    chunks.forEach((chunk, i) => {
      if (isFilterOnly(chunk)) return;
      out.push(chunk);
      const event = events[i];
      if (event) kept.push(event);
    });
    return out;
  };
  const filtered: StreamDecoder = {
    push: (bytes) => keep(decoder.push(bytes)),
    end() {
      const tail = decoder.end();
      return { ...tail, chunks: keep(tail.chunks) };
    },
  };
  if (!takeInner) return filtered;
  return {
    ...filtered,
    nativePerChunk: true,
    takeNative() {
      const out = kept;
      kept = [];
      return out;
    },
  };
}

/** The OpenAI adapter's optional embeddings transforms, which it does implement. */
function delegate<K extends 'buildEmbeddingsRequest' | 'parseEmbeddingsResponse'>(name: K): NonNullable<ProviderAdapter[K]> {
  const fn = openAICompatibleAdapter[name];
  if (!fn) throw gatewayError('internal_error', `the OpenAI adapter has no ${name}`);
  return fn.bind(openAICompatibleAdapter) as NonNullable<ProviderAdapter[K]>;
}

/**
 * Whether the deployment's API version takes `stream_options` and `max_completion_tokens` (Azure OpenAI from
 * 2024-09-01-preview; the v1 API, the default, does too): an older one refuses the request, so tollgate does not ask it for
 * stream usage (it counts the stream's tokens itself, as it did before it asked) and sends the limit as max_tokens.
 */
function knowsStreamOptions(target: Target): boolean {
  const version = target.provider.options.apiVersion;
  if (target.provider.vendor.id !== 'azure' || version === undefined || usesV1(target, target.provider.baseUrl.replace(/\/+$/, ''))) return true;
  return version.slice(0, 10) >= '2024-09-01';
}

/**
 * The target as a vendor of an API version before 2024-09-01: not asked for stream usage (see
 * VendorQuirks.noStreamOptions), and given the limit as max_tokens (the translated dialects send max_completion_tokens).
 */
function withoutStreamOptions(target: Target): Target {
  const vendor = target.provider.vendor;
  const renameFields = { ...vendor.quirks?.renameFields, max_completion_tokens: 'max_tokens' };
  return { ...target, provider: { ...target.provider, vendor: { ...vendor, quirks: { ...vendor.quirks, noStreamOptions: true, renameFields } } } };
}

/** What the model inference API does with fields outside its spec when the operator does not say (`extra_parameters`). */
const FOUNDRY_EXTRA_PARAMETERS = 'drop';

/**
 * An Azure AI Foundry request with its `extra-parameters` header, which the service reads on every call (absent, it
 * refuses any field outside its spec): the provider's `extra_parameters` (`pass-through` lets a model's own options,
 * such as Mistral's `safe_prompt`, reach it), else `drop`. A header of that name the operator set on the provider wins.
 */
function withExtraParameters(request: UpstreamRequest, target: Target): UpstreamRequest {
  if (target.provider.vendor.id !== 'azure-ai') return request;
  if (Object.keys(target.provider.headers).some((name) => name.toLowerCase() === 'extra-parameters')) return request;
  const behaviour = target.provider.options.extraParameters ?? FOUNDRY_EXTRA_PARAMETERS;
  return { ...request, headers: { ...request.headers, 'extra-parameters': behaviour } };
}

/**
 * Whether the target serves OpenAI's Responses API as OpenAI does: Azure OpenAI's v1 API (`/openai/v1/responses`, the
 * deployment as the model), and its compaction (`/openai/v1/responses/compact`). The dated API has the Responses API
 * only from preview versions, at another path: its clients get the translation to chat completions, and no compaction.
 */
function servesResponses(target: Target, format: string): boolean {
  return (format === RESPONSES_FORMAT || format === COMPACT_FORMAT) && usesV1(target, target.provider.baseUrl.replace(/\/+$/, ''));
}

export const azureAdapter: ProviderAdapter = {
  format: 'azure',
  answerFormat: 'openai',

  takesNative: servesResponses,

  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest {
    if (native?.format === RESPONSES_FORMAT) return { ...responsesRequest(native, target), url: azureUrl(target, 'responses') };
    if (native?.format === COMPACT_FORMAT) return compactionRequest(native, target, azureUrl(target, 'responses/compact'));
    const url = azureUrl(target, 'chat/completions');
    return withExtraParameters({ ...openAICompatibleAdapter.buildChatRequest(request, knowsStreamOptions(target) ? target : withoutStreamOptions(target)), url }, target);
  },

  parseChatResponse(body, target, native) {
    if (native?.format === RESPONSES_FORMAT) return responseCompletion(body, target);
    if (native?.format === COMPACT_FORMAT) return compactionCompletion(body, target);
    return openAICompatibleAdapter.parseChatResponse(body, target);
  },

  createStreamDecoder(target, request, native, verbatim) {
    if (native?.format === RESPONSES_FORMAT) return createResponsesDecoder(target);
    return withoutFilterChunks(openAICompatibleAdapter.createStreamDecoder(target, request, null, verbatim));
  },

  parseError(status, headers, bodyText, target) {
    return openAICompatibleAdapter.parseError(status, headers, bodyText, target);
  },

  buildEmbeddingsRequest(request: EmbeddingsRequest, target: Target): UpstreamRequest {
    const url = azureUrl(target, 'embeddings');
    return withExtraParameters({ ...delegate('buildEmbeddingsRequest')(request, target), url }, target);
  },

  parseEmbeddingsResponse(body, target, request) {
    return delegate('parseEmbeddingsResponse')(body, target, request);
  },

  async authorize(request: UpstreamRequest, target: Target, dispatcher?: Dispatcher): Promise<UpstreamRequest> {
    const entra = entraOf(target);
    if (!entra) return request;
    const token = await entraToken(entra, target.provider.name, dispatcher, Math.min(TOKEN_TIMEOUT_MS, target.provider.timeouts.firstByteMs));
    // No api-key goes with the token: a resource with key auth disabled takes only the bearer.
    const { 'api-key': _key, ...headers } = request.headers;
    return { ...request, headers: { ...headers, authorization: `Bearer ${token}` } };
  },

  forgetCredential(request: UpstreamRequest, target: Target, error: GatewayError): boolean {
    // Azure answers a token it no longer takes with 401; its 403 is a permission the identity lacks, which a new token keeps lacking.
    if (error.upstreamStatus !== 401) return false;
    const entra = entraOf(target);
    const token = request.headers.authorization?.replace(/^Bearer /, '');
    if (!entra || !token) return false;
    forgetEntraToken(entra, token);
    return true;
  },
};
