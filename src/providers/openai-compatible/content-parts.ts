import type { ChatMessage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';

/**
 * Mistral's reasoning models (Magistral) write an answer's `content` as a list of chunks, not a string: a ThinkChunk
 * (`{"type":"thinking","thinking":[{"type":"text","text":...}]}`) and TextChunks (`{"type":"text","text":...}`),
 * in a whole answer's message and in each streamed delta (mistralai SDK: AssistantMessage and DeltaMessage content,
 * ThinkChunk, TextChunk). Every stage reads the canonical form, where a thinking model's thoughts are
 * `reasoning_content` and its text a string `content`: output rules, the cache, the other dialects' renderers. So
 * the list becomes those two texts, in place; a chunk with no text (a reference) is left out of them. A client of
 * the same format still gets the upstream's own bytes when no stage changed the answer (the adapter keeps them).
 * `whole`: a message, whose content stays a string ('' when it only thought); a delta without text has none.
 */
export function flattenContentParts(holder: Record<string, unknown>, whole: boolean): void {
  const parts = holder.content;
  if (!Array.isArray(parts)) return;
  let text = '';
  let thinking = '';
  for (const part of parts) {
    if (!isRecord(part)) continue;
    if (part.type === 'text' && typeof part.text === 'string') text += part.text;
    else if (part.type === 'thinking' && Array.isArray(part.thinking)) {
      for (const inner of part.thinking) if (isRecord(inner) && inner.type === 'text' && typeof inner.text === 'string') thinking += inner.text;
    }
  }
  if (whole || text !== '') holder.content = text;
  else delete holder.content;
  if (thinking !== '') holder.reasoning_content = (typeof holder.reasoning_content === 'string' ? holder.reasoning_content : '') + thinking;
}

/** Flattens the chunk lists of every choice's `message` (a whole answer) or `delta` (a stream event). */
export function flattenChoices(choices: readonly unknown[], field: 'message' | 'delta'): void {
  for (const choice of choices) {
    const holder = isRecord(choice) ? choice[field] : null;
    if (isRecord(holder) && Array.isArray(holder.content)) flattenContentParts(holder, field === 'message');
  }
}

/**
 * An assistant turn handed back to a vendor that takes thinking only as a content chunk (Mistral): its
 * reasoning_content (or vLLM's `reasoning`) goes as a leading ThinkChunk and its text as a TextChunk, the fields it
 * refuses left out. Any other message, or one without reasoning, is returned as it is.
 */
export function withThinkingChunk(message: ChatMessage): ChatMessage {
  const fields = message as unknown as Record<string, unknown>;
  if (message.role !== 'assistant' || (!('reasoning_content' in fields) && !('reasoning' in fields))) return message;
  const { reasoning_content: reasoningContent, reasoning, ...rest } = fields;
  const thinking = typeof reasoningContent === 'string' ? reasoningContent : typeof reasoning === 'string' ? reasoning : '';
  if (thinking === '') return rest as unknown as ChatMessage;
  const content = rest.content;
  const after = Array.isArray(content) ? content : typeof content === 'string' && content !== '' ? [{ type: 'text', text: content }] : [];
  return { ...rest, content: [{ type: 'thinking', thinking: [{ type: 'text', text: thinking }] }, ...after] } as unknown as ChatMessage;
}
