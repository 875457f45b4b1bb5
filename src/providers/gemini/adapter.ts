import type { ChatCompletionRequest, EmbeddingsRequest, NativeRequest } from '../../core/canonical.js';
import { jsonHeaders as upstreamHeaders } from '../upstream-request.js';
import type { ProviderAdapter, Target, UpstreamRequest } from '../../core/provider.js';
import { batchEmbedContentsUrl, embeddingsFromGemini, toGeminiEmbedRequest } from './embeddings.js';
import { geminiError } from './errors.js';
import { toGeminiRequest } from './request.js';
import { completionFromGemini } from './response.js';
import { createGeminiStreamDecoder } from './stream.js';
import { baseUrlForVersion, generateContentUrl } from './url.js';


/** Google AI Studio's Gemini API: generateContent / streamGenerateContent and batchEmbedContents with an API key header. */
export const geminiAdapter: ProviderAdapter = {
  format: 'gemini',

  /**
   * The client's own GenerateContentRequest when it came from tollgate's `/genai` route (native pass-through: the
   * model is in the URL, so the body goes exactly as the client wrote it), else the canonical request translated.
   */
  buildChatRequest(request: ChatCompletionRequest, target: Target, native?: NativeRequest | null): UpstreamRequest {
    return {
      method: 'POST',
      url: generateContentUrl(native ? baseUrlForVersion(target.provider.baseUrl, native.apiVersion) : target.provider.baseUrl, target.model, request.stream === true),
      headers: upstreamHeaders(target),
      body: JSON.stringify(native ? native.body : toGeminiRequest(request, target.model)),
    };
  },

  parseChatResponse(body, target) {
    return completionFromGemini(body, target.model, target.provider.name);
  },

  createStreamDecoder(target, request, native) {
    return createGeminiStreamDecoder(target.model, target.provider.name, request.stream_options?.include_usage === true, { keepEvents: native !== undefined && native !== null });
  },

  parseError(status, headers, bodyText, target) {
    return geminiError(target.provider.name, status, headers, bodyText);
  },

  buildEmbeddingsRequest(request: EmbeddingsRequest, target: Target): UpstreamRequest {
    return {
      method: 'POST',
      url: batchEmbedContentsUrl(target.provider.baseUrl, target.model),
      headers: upstreamHeaders(target),
      body: JSON.stringify(toGeminiEmbedRequest(request, target.model)),
    };
  },

  parseEmbeddingsResponse(body, target, request) {
    return embeddingsFromGemini(body, request, target.provider.name);
  },
};
