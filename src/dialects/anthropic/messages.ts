import type { ChatMessage } from '../../core/canonical.js';
import { cannotTranslate, plainText, textPart, toolCall, toolMessage, userPart, type DialectOptions } from './content.js';
import { invalidRequest } from './errors.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';

function blocksOf(content: unknown, where: string): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw invalidRequest(`${where}.content`, 'Input should be a valid string or list');
  return content.map((block: unknown, i) => {
    if (!isRecord(block) || typeof block.type !== 'string') throw invalidRequest(`${where}.content.${i}`, 'Input should be a valid dictionary');
    return block;
  });
}

/** Anthropic's top-level `system` (a string or text blocks) as the canonical system message. */
export function systemMessage(system: unknown): ChatMessage | null {
  if (system === undefined || system === null || system === '') return null;
  if (typeof system === 'string') return { role: 'system', content: system };
  if (!Array.isArray(system)) throw invalidRequest('system', 'Input should be a valid string or list');
  const parts = system.map((block: unknown, i) => {
    if (!isRecord(block)) throw invalidRequest(`system.${i}`, 'Input should be a valid dictionary');
    return textPart(block, `system.${i}`);
  });
  if (parts.length === 0) return null;
  return { role: 'system', content: systemContent(parts) };
}

/**
 * How a turn's text parts become canonical content: a plain string every provider takes, unless a marker
 * (`cache_control`) keeps them apart. Separate system blocks read as paragraphs (as the Anthropic adapter joins
 * them on the way out), a user turn's lone text part is its text, an assistant's text is joined, and an assistant
 * turn with tool calls and no text has null content. markers.ts shapes a request again with these when it drops
 * the markers, so a request loses them the same way whether that happens when it is read or per attempt.
 */
export function systemContent(parts: Json[]): string | Json[] {
  return plainText(parts) ? parts.map((part) => part.text as string).join('\n\n') : parts;
}

export function userContent(parts: Json[]): string | Json[] {
  return parts.length === 1 && plainText(parts) ? (parts[0]?.text as string) : parts;
}

export function assistantContent(parts: Json[], toolCalls: boolean): string | Json[] | null {
  const text = plainText(parts) ? parts.map((part) => part.text as string).join('') : parts;
  return text === '' && toolCalls ? null : text;
}

/**
 * A user turn: its tool_result blocks become `tool` messages, which must come first because OpenAI wants them
 * right after the assistant's tool calls (Anthropic also puts them first); the images and documents the tools
 * answered with, then the turn's other blocks, follow as one user message.
 */
function userMessages(content: unknown, where: string, options: DialectOptions): ChatMessage[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const tools: ChatMessage[] = [];
  const media: Json[] = [];
  const parts: Json[] = [];
  blocksOf(content, where).forEach((block, i) => {
    if (block.type === 'tool_result') {
      const result = toolMessage(block, `${where}.content.${i}`, options);
      tools.push(result.message as ChatMessage);
      for (const part of result.media) media.push(part);
    } else {
      const part = userPart(block, `${where}.content.${i}`, options);
      if (part) parts.push(part);
    }
  });
  // concat, not spread: a turn may hold more parts than a call's arguments can.
  const all = media.length > 0 ? media.concat(parts) : parts;
  if (all.length === 0) return tools;
  tools.push({ role: 'user', content: userContent(all) });
  return tools;
}

/**
 * An assistant turn: text as content, tool_use blocks as tool_calls, the text of its thinking blocks as
 * `reasoning_content` (which only vendors that want it back get: see markers.ts). Their signatures are left out:
 * they only mean something to Anthropic, and the canonical request has no place to carry them.
 */
function assistantMessage(content: unknown, where: string, options: DialectOptions): ChatMessage {
  if (typeof content === 'string') return { role: 'assistant', content };
  const parts: Json[] = [];
  const calls: Json[] = [];
  let reasoning = '';
  blocksOf(content, where).forEach((block, i) => {
    const at = `${where}.content.${i}`;
    if (block.type === 'text') parts.push(textPart(block, at));
    else if (block.type === 'tool_use') calls.push(toolCall(block, at));
    else if (block.type === 'thinking') {
      if (typeof block.thinking === 'string') reasoning += block.thinking;
    } else if (block.type !== 'redacted_thinking') {
      // Server tool calls and their results (server_tool_use, web_search_tool_result, ...) have no canonical form.
      cannotTranslate(options, () => invalidRequest(`${at}.type`, `An assistant content block of type '${quoteValue(block.type)}' cannot be translated by the gateway.`));
    }
  });
  const message: ChatMessage = { role: 'assistant', content: assistantContent(parts, calls.length > 0) };
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (calls.length > 0) message.tool_calls = calls;
  return message;
}

/** Anthropic's system and alternating user/assistant turns as canonical chat messages. */
export function canonicalMessages(system: unknown, messages: unknown[], options: DialectOptions): ChatMessage[] {
  const out: ChatMessage[] = [];
  const head = systemMessage(system);
  if (head) out.push(head);
  messages.forEach((message, i) => {
    const where = `messages.${i}`;
    if (!isRecord(message)) throw invalidRequest(where, 'Input should be a valid dictionary');
    if (message.role === 'user') for (const turn of userMessages(message.content, where, options)) out.push(turn);
    else if (message.role === 'assistant') out.push(assistantMessage(message.content, where, options));
    else throw invalidRequest(`${where}.role`, "Input should be 'user' or 'assistant'");
  });
  return out;
}
