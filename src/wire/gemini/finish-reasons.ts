/** Gemini's finishReason and OpenAI's finish_reason, both ways, side by side so each stays the other's inverse. */

/**
 * The finish reasons that mean a filter stopped the answer: Gemini's and Vertex AI's safety, recitation and
 * blocklist filters, Vertex AI's Model Armor, and the image filters of the models that generate images.
 */
const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'MODEL_ARMOR', 'IMAGE_SAFETY', 'IMAGE_PROHIBITED_CONTENT', 'IMAGE_RECITATION']);

/** Gemini's finishReason → OpenAI's; a candidate that called a function finished for tool_calls. */
export function finishReasonFromGemini(reason: unknown, calledFunction: boolean): string {
  if (calledFunction) return 'tool_calls';
  if (reason === 'MAX_TOKENS') return 'length';
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter';
  return 'stop';
}

/**
 * Gemini's finishReason when the candidate did not end as the model meant and OpenAI's finish reasons have no word
 * for it (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS, LANGUAGE, OTHER, ...), else null.
 * finishReasonFromGemini says `stop` for those (as LiteLLM does; OpenAI's SDK types know no failure reason), so the
 * adapter puts this beside it as the choice's `native_finish_reason` (as OpenRouter does): a client can tell a failed
 * turn from a finished one, and the cache stores no answer that has one.
 */
export function unmetFinishReason(reason: unknown): string | null {
  if (typeof reason !== 'string' || reason === 'STOP' || reason === 'MAX_TOKENS' || reason === 'FINISH_REASON_UNSPECIFIED' || FILTERED.has(reason)) return null;
  return reason;
}

/**
 * OpenAI's finish_reason → Gemini's finishReason. Gemini ends a function-calling turn with STOP (the call is in
 * the parts), a length cut with MAX_TOKENS and a filtered answer with SAFETY. The inverse of finishReasonFromGemini.
 */
export function geminiFinishReason(reason: unknown): string {
  if (reason === 'length') return 'MAX_TOKENS';
  if (reason === 'content_filter') return 'SAFETY';
  return 'STOP';
}
