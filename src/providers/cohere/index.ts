import type { ChatCompletionRequest, EmbeddingsRequest } from '../../core/canonical.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import type { ProviderFamily } from '../../core/provider.js';
import { jsonHeaders } from '../upstream-request.js';
import { cohereEmbeddings, cohereEmbedRequestBody } from './embeddings.js';
import { cohereError } from './errors.js';
import { cohereRequestBody } from './request.js';
import { isRecord } from '../../core/is-record.js';
import { cohereCompletion, cohereUsage } from './response.js';
import { createCohereStreamDecoder } from './stream.js';
import { cohereVendors } from './vendors.js';

function headers(target: Target, stream: boolean): Record<string, string> {
  return jsonHeaders(target, { accept: stream ? 'text/event-stream' : 'application/json' });
}

function url(target: Target, operation: 'chat' | 'embed'): string {
  return `${target.provider.baseUrl.replace(/\/+$/, '')}/${operation}`;
}

/** Cohere API v2: chat at `POST {baseUrl}/chat`, embeddings at `POST {baseUrl}/embed`, bearer key. */
export const cohereAdapter: ProviderAdapter = {
  format: 'cohere',

  buildChatRequest(request: ChatCompletionRequest, target: Target): UpstreamRequest {
    const body = cohereRequestBody(request, target.model);
    return { method: 'POST', url: url(target, 'chat'), headers: headers(target, body.stream === true), body: JSON.stringify(body) };
  },

  parseChatResponse(body, target) {
    return cohereCompletion(body, target.provider.name, target.model);
  },

  // A generation that broke off (finish_reason ERROR or TIMEOUT) is refused as an answer, but Cohere bills its usage.
  reportedUsage(body) {
    return isRecord(body) ? cohereUsage(body.usage) : null;
  },

  createStreamDecoder(target, request) {
    return createCohereStreamDecoder(target.provider.name, target.model, request);
  },

  parseError(status, responseHeaders, bodyText, target) {
    return cohereError(target.provider.name, status, responseHeaders, bodyText);
  },

  buildEmbeddingsRequest(request: EmbeddingsRequest, target: Target): UpstreamRequest {
    const body = cohereEmbedRequestBody(request, target.model);
    return { method: 'POST', url: url(target, 'embed'), headers: headers(target, false), body: JSON.stringify(body) };
  },

  parseEmbeddingsResponse(body, target, request) {
    return cohereEmbeddings(body, target.provider.name, request);
  },
};

export const cohereFamily: ProviderFamily = { adapter: cohereAdapter, vendors: cohereVendors };
