import { isRecord } from '../../core/is-record.js';

/**
 * The id prefix of the reasoning items tollgate writes for a translated answer (Claude's thinking, Gemini's thoughts
 * as a summary, Claude's signed blocks as encrypted_content): OpenAI, sent one back, would look for a stored item of
 * that id, or fail to decrypt its content, and refuse the request ("Item with id 'rs_...' not found").
 */
export const TRANSLATED_REASONING_PREFIX = 'rs_tg';

/**
 * What starts the encrypted_content of a reasoning item tollgate wrote for Claude's signed thinking: the blocks
 * themselves (thinking with its signature, redacted thinking) as base64url JSON. Only Claude can check them; tollgate
 * hands them back to it unchanged on a later turn (see thinkingBlocksIn).
 */
const THINKING_PREFIX = 'tg_anthropic_thinking.';

/** Claude's signed thinking blocks as a reasoning item's encrypted_content; undefined when there are none. */
export function encryptedThinking(blocks: readonly unknown[]): string | undefined {
  return blocks.length === 0 ? undefined : THINKING_PREFIX + Buffer.from(JSON.stringify(blocks)).toString('base64url');
}

/** The thinking blocks a reasoning item's encrypted_content carries when tollgate wrote it (see encryptedThinking); else null. */
export function thinkingBlocksIn(encrypted: unknown): Array<Record<string, unknown>> | null {
  if (typeof encrypted !== 'string' || !encrypted.startsWith(THINKING_PREFIX)) return null;
  try {
    const blocks: unknown = JSON.parse(Buffer.from(encrypted.slice(THINKING_PREFIX.length), 'base64url').toString('utf8'));
    return Array.isArray(blocks) ? blocks.filter(isRecord) : null;
  } catch {
    return null;
  }
}

/** A reasoning item tollgate wrote (its id's prefix): only the provider whose thinking it shows can read it. */
function translatedReasoning(item: unknown): boolean {
  return isRecord(item) && item.type === 'reasoning' && typeof item.id === 'string' && item.id.startsWith(`${TRANSLATED_REASONING_PREFIX}_`);
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
