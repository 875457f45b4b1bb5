import type { ChatCompletionRequest } from '../../dialects/openai/types.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../contract.js';
import type { ProviderFamily } from '../registry.js';
import { authHeaders } from '../auth-headers.js';
import { cohereError } from './errors.js';
import { cohereRequestBody } from './request.js';
import { cohereCompletion } from './response.js';
import { createCohereStreamDecoder } from './stream.js';
import { cohereVendors } from './vendors.js';

function headers(target: Target, stream: boolean): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: stream ? 'text/event-stream' : 'application/json',
    ...target.provider.vendor.defaultHeaders,
    ...target.provider.headers,
    ...authHeaders(target.provider.vendor.auth, target.apiKey),
  };
}

/** Cohere Chat API v2: `POST {baseUrl}/chat`, bearer key. */
export const cohereAdapter: ProviderAdapter = {
  format: 'cohere',

  buildChatRequest(request: ChatCompletionRequest, target: Target): UpstreamRequest {
    const body = cohereRequestBody(request, target.model);
    return { method: 'POST', url: `${target.provider.baseUrl.replace(/\/+$/, '')}/chat`, headers: headers(target, body.stream === true), body: JSON.stringify(body) };
  },

  parseChatResponse(body, target) {
    return cohereCompletion(body, target.provider.name, target.model);
  },

  createStreamDecoder(target, request) {
    return createCohereStreamDecoder(target.provider.name, target.model, request);
  },

  parseError(status, responseHeaders, bodyText, target) {
    return cohereError(target.provider.name, status, responseHeaders, bodyText);
  },
};

export const cohereFamily: ProviderFamily = { adapter: cohereAdapter, vendors: cohereVendors };
