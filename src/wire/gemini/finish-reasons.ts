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
 * OpenAI's finish_reason → Gemini's finishReason. Gemini ends a function-calling turn with STOP (the call is in
 * the parts), a length cut with MAX_TOKENS and a filtered answer with SAFETY. The inverse of finishReasonFromGemini.
 */
export function geminiFinishReason(reason: unknown): string {
  if (reason === 'length') return 'MAX_TOKENS';
  if (reason === 'content_filter') return 'SAFETY';
  return 'STOP';
}
