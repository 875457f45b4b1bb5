import type { ChatCompletionRequest, EmbeddingsRequest, NativeRequest } from '../../core/canonical.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import { isRecord } from '../../core/is-record.js';
import { completionOf } from '../anthropic/index.js';
import { invokeBody, isClaudeTarget } from './claude.js';
import { createInvokeStreamDecoder } from './invoke-stream.js';
import { embeddingsBody, embeddingsFromInvoke } from './embeddings.js';
import { bedrockError } from './errors.js';
import { converseBody } from './request.js';
import { completionFromConverse } from './response.js';
import { authorizeBedrock, DEFAULT_REGION, forgetBedrockCredential } from './sign.js';
import { createConverseStreamDecoder } from './stream.js';
import { pathSegment } from '../../path-segment.js';

/** The base URL with `{region}` replaced by the configured region; a base URL without `{region}` is used as it is. */
export function bedrockBaseUrl(target: Target): string {
  const base = target.provider.baseUrl.replaceAll('{region}', target.provider.options.region ?? DEFAULT_REGION);
  return base.endsWith('/') ? base.slice(0, -1) : base;
}

/**
 * InvokeModel (or InvokeModelWithResponseStream) with an Anthropic client's own Messages body for Claude (see
 * invokeBody). The body's MIME type is asked for in `accept` for a whole answer, in `x-amzn-bedrock-accept` for a
 * stream (AWS API reference), whose framing is the event stream.
 */
function invokeRequest(native: NativeRequest, target: Target, stream: boolean): UpstreamRequest {
  return {
    method: 'POST',
    url: `${bedrockBaseUrl(target)}/model/${pathSegment(target.model, 'Bedrock')}/${stream ? 'invoke-with-response-stream' : 'invoke'}`,
    headers: {
      'content-type': 'application/json',
      ...(stream ? { 'x-amzn-bedrock-accept': 'application/json' } : { accept: 'application/json' }),
      ...target.provider.vendor.defaultHeaders,
      ...target.provider.headers,
    },
    body: JSON.stringify(invokeBody(native)),
  };
}

/**
 * Amazon Bedrock's Converse / ConverseStream API: one request shape for every model Bedrock hosts (embeddings go
 * through InvokeModel, see `embeddings.ts`). Claude's models also take Anthropic's Messages body through InvokeModel,
 * so an Anthropic client's request to one is passed through there (native pass-through: signatures, redacted
 * thinking and fields Converse does not know survive), its answer coming back as Claude wrote it. The request is
 * signed (or given its API key) in `authorize`, after it is built, because SigV4 covers the body.
 */
export const bedrockAdapter: ProviderAdapter = {
  format: 'bedrock',

  nativeFormat: (target: Target) => (isClaudeTarget(target) ? 'anthropic' : 'bedrock'),

  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest {
    if (native) return invokeRequest(native, target, request.stream === true);
    const action = request.stream ? 'converse-stream' : 'converse';
    return {
      method: 'POST',
      url: `${bedrockBaseUrl(target)}/model/${pathSegment(target.model, 'Bedrock')}/${action}`,
      headers: {
        'content-type': 'application/json',
        ...target.provider.vendor.defaultHeaders,
        ...target.provider.headers,
      },
      body: JSON.stringify(converseBody(request, isClaudeTarget(target))),
    };
  },

  /**
   * InvokeModel with the model's own embeddings body. It is built in full here, before `authorize`, so the
   * SigV4 signature covers this URL and body like a Converse call's.
   */
  buildEmbeddingsRequest(request: EmbeddingsRequest, target: Target): UpstreamRequest {
    return {
      method: 'POST',
      url: `${bedrockBaseUrl(target)}/model/${pathSegment(target.model, 'Bedrock')}/invoke`,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        ...target.provider.vendor.defaultHeaders,
        ...target.provider.headers,
      },
      body: JSON.stringify(embeddingsBody(request, target.model)),
    };
  },

  parseEmbeddingsResponse(body: unknown, target: Target, request: EmbeddingsRequest) {
    return embeddingsFromInvoke(body, target.provider.name, target.model, request);
  },

  authorize: authorizeBedrock,

  forgetCredential: forgetBedrockCredential,

  parseChatResponse(body: unknown, target: Target) {
    // Claude's InvokeModel answers with Anthropic's message; a Converse answer has its `output`.
    if (isClaudeTarget(target) && isRecord(body) && !('output' in body)) return completionOf(body, target.provider.name);
    return completionFromConverse(body, target.provider.name, target.model);
  },

  createStreamDecoder(target: Target, request: ChatCompletionRequest, native?: NativeRequest | null) {
    if (native) return createInvokeStreamDecoder(target.provider.name, request, true);
    return createConverseStreamDecoder(target.provider.name, target.model, request.stream_options?.include_usage === true);
  },

  parseError(status, headers, bodyText, target) {
    return bedrockError(target.provider.name, status, headers, bodyText);
  },
};
