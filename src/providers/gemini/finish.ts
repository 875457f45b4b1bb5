const FILTERED = new Set(['SAFETY', 'RECITATION', 'BLOCKLIST', 'PROHIBITED_CONTENT', 'SPII', 'IMAGE_SAFETY']);

/** Gemini's finishReason → OpenAI's; a candidate that called a function finished for tool_calls. */
export function finishReasonFromGemini(reason: unknown, calledFunction: boolean): string {
  if (calledFunction) return 'tool_calls';
  if (reason === 'MAX_TOKENS') return 'length';
  if (typeof reason === 'string' && FILTERED.has(reason)) return 'content_filter';
  return 'stop';
}
