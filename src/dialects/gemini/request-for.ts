import type { ChatCompletionRequest } from '../../core/canonical.js';
import type { Target } from '../../core/provider.js';
import { withDerivedEffort } from '../../core/derived-effort.js';
import { textDocumentsFor } from '../text-documents.js';

/**
 * Formats whose adapters send `top_k` on (generationConfig.topK reads back as it): Anthropic's and Vertex AI's
 * (its Claude as top_k, its Gemini as topK), Gemini's, and Bedrock's to Claude in additionalModelRequestFields.
 * OpenAI's API refuses the field, and Cohere's adapter has no place for it, so they get the request without it,
 * as on /anthropic (markers.ts).
 */
const READS_TOP_K = new Set(['anthropic', 'vertex', 'gemini', 'bedrock']);

function withoutTopK(request: ChatCompletionRequest, format: string): ChatCompletionRequest {
  if (request.top_k === undefined || READS_TOP_K.has(format)) return request;
  const { top_k: _dropped, ...rest } = request;
  return rest as ChatCompletionRequest;
}

/**
 * The canonical request of a /genai client as an attempt on an upstream of `format` gets it: `top_k` only where it is
 * taken, text documents as text where files are not, and the reasoning_effort a thinkingConfig became as the
 * target's model takes it.
 */
export function genAIRequestFor(request: ChatCompletionRequest, format: string, target?: Target): ChatCompletionRequest {
  return withDerivedEffort(textDocumentsFor(withoutTopK(request, format), format), target);
}
