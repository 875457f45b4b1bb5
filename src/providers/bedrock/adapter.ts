import type { ChatCompletionRequest, EmbeddingsRequest } from '../../core/canonical.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import { embeddingsBody, embeddingsFromInvoke } from './embeddings.js';
import { bedrockError } from './errors.js';
import { converseBody } from './request.js';
import { completionFromConverse } from './response.js';
import { authorizeBedrock, DEFAULT_REGION } from './sign.js';
import { createConverseStreamDecoder } from './stream.js';
import { pathSegment } from '../../path-segment.js';

/** The base URL with `{region}` replaced by the configured region; a base URL without `{region}` is used as it is. */
export function bedrockBaseUrl(target: Target): string {
  const base = target.provider.baseUrl.replaceAll('{region}', target.provider.options.region ?? DEFAULT_REGION);
  return base.endsWith('/') ? base.slice(0, -1) : base;
}

/**
 * Amazon Bedrock's Converse / ConverseStream API: one request shape for every model Bedrock hosts (embeddings go
 * through InvokeModel, see `embeddings.ts`). The request is signed (or given its API key) in `authorize`, after
 * it is built, because SigV4 covers the body.
 */
export const bedrockAdapter: ProviderAdapter = {
  format: 'bedrock',

  buildChatRequest(request: ChatCompletionRequest, target: Target): UpstreamRequest {
    const action = request.stream ? 'converse-stream' : 'converse';
    return {
      method: 'POST',
      url: `${bedrockBaseUrl(target)}/model/${pathSegment(target.model, 'Bedrock')}/${action}`,
      headers: {
        'content-type': 'application/json',
        ...target.provider.vendor.defaultHeaders,
        ...target.provider.headers,
      },
      body: JSON.stringify(converseBody(request, target.model)),
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

  parseChatResponse(body: unknown, target: Target) {
    return completionFromConverse(body, target.provider.name, target.model);
  },

  createStreamDecoder(target: Target, request: ChatCompletionRequest) {
    return createConverseStreamDecoder(target.provider.name, target.model, request.stream_options?.include_usage === true);
  },

  parseError(status, headers, bodyText, target) {
    return bedrockError(target.provider.name, status, headers, bodyText);
  },
};
