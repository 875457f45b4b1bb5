import { isRecord } from '../../core/is-record.js';

/**
 * The id prefix of the reasoning items tollgate writes for a translated answer (Claude's thinking, Gemini's thoughts
 * as a summary): they carry no encrypted content, so OpenAI, sent one back, would look for a stored item of that id
 * and refuse the request ("Item with id 'rs_...' not found").
 */
export const TRANSLATED_REASONING_PREFIX = 'rs_tg';

function translatedReasoning(item: unknown): boolean {
  return isRecord(item) && item.type === 'reasoning' && item.encrypted_content === undefined && typeof item.id === 'string' && item.id.startsWith(`${TRANSLATED_REASONING_PREFIX}_`);
}

/**
 * A Responses body for a provider serving the Responses API without the reasoning items tollgate wrote for another
 * provider's answer (a conversation a fallback or another model answered before): only that model could have read
 * them, as a translation leaves any reasoning item out. The body itself when it holds none.
 */
export function withoutTranslatedReasoning(body: Record<string, unknown>): Record<string, unknown> {
  const input = body.input;
  if (!Array.isArray(input) || !input.some(translatedReasoning)) return body;
  return { ...body, input: input.filter((item: unknown) => !translatedReasoning(item)) };
}
