import type { ChatCompletionRequest } from '../../dialects/openai/types.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../contract.js';
import { authHeaders } from '../auth-headers.js';
import { errorFromResponse } from './errors.js';
import { messagesBody } from './request.js';
import { completionOf } from './response.js';
import { createAnthropicStreamDecoder } from './stream.js';

function joinUrl(base: string, path: string): string {
  return base.endsWith('/') ? `${base}${path.slice(1)}` : `${base}${path}`;
}

function upstreamHeaders(target: Target): Record<string, string> {
  return {
    'content-type': 'application/json',
    ...target.provider.vendor.defaultHeaders,
    ...target.provider.headers,
    ...authHeaders(target.provider.vendor.auth, target.apiKey),
  };
}

/** Anthropic's Messages API (`POST {base}/messages`), translated from and to the canonical OpenAI shapes. */
export const anthropicAdapter: ProviderAdapter = {
  format: 'anthropic',

  buildChatRequest(request: ChatCompletionRequest, target: Target): UpstreamRequest {
    return {
      method: 'POST',
      url: joinUrl(target.provider.baseUrl, '/messages'),
      headers: upstreamHeaders(target),
      body: JSON.stringify(messagesBody(request, target.model)),
    };
  },

  parseChatResponse(body, target) {
    return completionOf(body, target.provider.name);
  },

  createStreamDecoder(target: Target, request: ChatCompletionRequest) {
    return createAnthropicStreamDecoder(target.provider.name, request);
  },

  parseError(status, headers, bodyText, target) {
    return errorFromResponse(target.provider.name, status, headers, bodyText);
  },

  buildListModelsRequest(target: Target): UpstreamRequest {
    return { method: 'GET', url: joinUrl(target.provider.baseUrl, '/models'), headers: upstreamHeaders(target), body: undefined };
  },
};
