import { countTokens } from 'gpt-tokenizer';
import type { ChatMessage } from '../dialects/openai/types.js';

/**
 * Token counting for budget reservations and for charging streams that end without a usage report.
 *
 * gpt-tokenizer's default encoding (o200k_base, the GPT-4o / GPT-5 family's) serves for every provider: other
 * vendors' tokenizers differ by some percent either way, which is fine for an estimate; billed usage comes
 * from the upstream whenever it reports any.
 */

/** Text that looks like a special token (`<|endoftext|>`) is counted as plain text, never refused. */
const PLAIN = { disallowedSpecial: new Set<string>() };

/** A flat estimate per image: OpenAI's high-detail price of a 1024x1024 image (85 base + 4 tiles of 512x512 at 170). */
const IMAGE_TOKENS = 765;
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_NAME = 1;
const REPLY_PRIMING = 3;

export function countTextTokens(text: string): number {
  return text.length === 0 ? 0 : countTokens(text, PLAIN);
}

function contentTokens(content: unknown): number {
  if (typeof content === 'string') return countTextTokens(content);
  if (!Array.isArray(content)) return 0;
  let tokens = 0;
  for (const part of content) {
    if (typeof part === 'string') {
      tokens += countTextTokens(part);
      continue;
    }
    if (typeof part !== 'object' || part === null) continue;
    const { type, text, refusal } = part as { type?: unknown; text?: unknown; refusal?: unknown };
    if (typeof text === 'string') tokens += countTextTokens(text);
    else if (typeof refusal === 'string') tokens += countTextTokens(refusal);
    else if (type === 'image_url' || type === 'image') tokens += IMAGE_TOKENS;
  }
  return tokens;
}

/** An assistant's tool calls: each function's name and its JSON arguments. */
function toolCallTokens(toolCalls: unknown): number {
  if (!Array.isArray(toolCalls)) return 0;
  let tokens = 0;
  for (const call of toolCalls) {
    const fn = (call as { function?: { name?: unknown; arguments?: unknown } } | null)?.function;
    if (typeof fn?.name === 'string') tokens += countTextTokens(fn.name);
    if (typeof fn?.arguments === 'string') tokens += countTextTokens(fn.arguments);
  }
  return tokens;
}

/**
 * Tokens a chat prompt uses, OpenAI's way (the cookbook's count for the chat models): per message 3 tokens of
 * overhead, plus the role, the content (a string, or parts: text counted, each image a flat 765), the name and
 * 1 more when there is one, and tool calls; 3 more prime the reply. Tool definitions count as their JSON.
 */
export function countPromptTokens(messages: ChatMessage[], tools?: unknown): number {
  let tokens = REPLY_PRIMING;
  for (const message of messages) {
    tokens += TOKENS_PER_MESSAGE;
    if (typeof message.role === 'string') tokens += countTextTokens(message.role);
    tokens += contentTokens(message.content);
    if (typeof message.name === 'string') tokens += countTextTokens(message.name) + TOKENS_PER_NAME;
    if (message.tool_calls !== undefined) tokens += toolCallTokens(message.tool_calls);
    if (typeof message.tool_call_id === 'string') tokens += countTextTokens(message.tool_call_id);
  }
  if (tools !== undefined && tools !== null && !(Array.isArray(tools) && tools.length === 0)) {
    tokens += countTextTokens(JSON.stringify(tools));
  }
  return tokens;
}
