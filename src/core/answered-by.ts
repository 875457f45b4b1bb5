import type { RequestContext } from './context.js';

/**
 * Whether the upstream that answered the request speaks Gemini's format (Gemini's API, or Vertex AI, whose Gemini
 * answers it is). Only such an answer's `native_finish_reason` is tollgate's (the Gemini reason OpenAI has no word
 * for); an OpenAI-compatible upstream's answer may carry one of its own (OpenRouter's, on every choice).
 */
export function answeredByGemini(ctx: RequestContext): boolean {
  const provider = ctx.upstream === null ? undefined : ctx.config.providers.get(ctx.upstream.provider);
  const format = provider?.vendor.format;
  return format === 'gemini' || format === 'vertex';
}

/**
 * Whether the upstream that answered speaks a format whose adapter marks a choice that did not finish as the model
 * meant with `native_finish_reason` (Gemini's and Vertex AI's finishReason, Bedrock Converse's stopReason, where
 * OpenAI's finish reasons have no word for it): there, and only there, such a choice is a failed turn.
 */
export function marksUnmetFinish(ctx: RequestContext): boolean {
  const provider = ctx.upstream === null ? undefined : ctx.config.providers.get(ctx.upstream.provider);
  const format = provider?.vendor.format;
  return format === 'gemini' || format === 'vertex' || format === 'bedrock';
}
