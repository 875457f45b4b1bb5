import type { ChatCompletionRequest } from '../../dialects/openai/types.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../contract.js';
import { jsonHeaders as upstreamHeaders, joinUrl } from '../upstream-request.js';
import { errorFromResponse } from './errors.js';
import { messagesBody } from './request.js';
import { completionOf } from './response.js';
import { createAnthropicStreamDecoder } from './stream.js';


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
