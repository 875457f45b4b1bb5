import type { ChatCompletionRequest } from '../../core/canonical.js';
import { gatewayError } from '../../core/errors.js';

/**
 * Claude gives no log probabilities. An OpenAI client asking for them (`logprobs: true`, or `top_logprobs`, which
 * OpenAI only takes with it) gets the 400 naming the field, as for `n`, and as OpenAI answers for its own models
 * without them: an answer with `logprobs: null` would look like a provider fault, not a choice of model.
 */
export function refuseLogprobs(request: ChatCompletionRequest): void {
  if (request.logprobs === true) {
    throw gatewayError('invalid_request', 'anthropic: Claude does not return log probabilities (logprobs must be false or left out).', { param: 'logprobs' });
  }
}

/**
 * The request without log probabilities, for a dialect that promises none when the provider gives none (the
 * Responses API's `include: ["message.output_text.logprobs"]`), before it reaches Claude's Messages body.
 */
export function withoutLogprobs(request: ChatCompletionRequest): ChatCompletionRequest {
  if (request.logprobs === undefined && request.top_logprobs === undefined) return request;
  const { logprobs: _logprobs, top_logprobs: _top, ...rest } = request;
  return rest as ChatCompletionRequest;
}

/** Whether an attempt of this adapter format on this model sends Claude's Messages body (Anthropic, Claude on Vertex AI). */
export function sendsClaudeMessages(format: string, model: string): boolean {
  return format === 'anthropic' || (format === 'vertex' && model.startsWith('claude'));
}
