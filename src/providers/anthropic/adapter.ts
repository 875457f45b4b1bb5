import type { ChatCompletionRequest, NativeRequest } from '../../core/canonical.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import { jsonHeaders as upstreamHeaders, joinUrl } from '../upstream-request.js';
import { errorFromResponse } from './errors.js';
import { nativeMessagesBody } from './native.js';
import { defaultMaxTokens, messagesBody } from './request.js';
import { completionOf } from './response.js';
import { createAnthropicStreamDecoder } from './stream.js';

/**
 * Anthropic's Messages API (`POST {base}/messages`), translated from and to the canonical OpenAI shapes, or, for a
 * client of tollgate's Anthropic route, passed through as the client wrote it (see nativeMessagesBody).
 */
export const anthropicAdapter: ProviderAdapter = {
  format: 'anthropic',

  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest {
    const body = native ? nativeMessagesBody(native, target.model) : messagesBody(request, target.model);
    return {
      method: 'POST',
      url: joinUrl(target.provider.baseUrl, '/messages'),
      // A plain record: the call stage may set client-forwarded headers (anthropic-version, anthropic-beta) over these.
      headers: upstreamHeaders(target),
      body: JSON.stringify(body),
    };
  },

  parseChatResponse(body, target) {
    return completionOf(body, target.provider.name);
  },

  defaultOutputLimit: (_target: Target, request: ChatCompletionRequest) => defaultMaxTokens(request),

  createStreamDecoder(target: Target, request: ChatCompletionRequest, native?: NativeRequest | null) {
    return createAnthropicStreamDecoder(target.provider.name, request, { keepEvents: native !== undefined && native !== null });
  },

  parseError(status, headers, bodyText, target) {
    return errorFromResponse(target.provider.name, status, headers, bodyText);
  },

  buildListModelsRequest(target: Target): UpstreamRequest {
    return { method: 'GET', url: joinUrl(target.provider.baseUrl, '/models'), headers: upstreamHeaders(target), body: undefined };
  },
};
