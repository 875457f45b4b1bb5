import type { ChatMessage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import { contentBlocks } from './content.js';
import { type AnthropicBlock, type AnthropicMessage } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';
import { upstreamToolCallId } from '../tool-call-ids.js';

function invalid(message: string): GatewayError {
  return gatewayError('invalid_request', `anthropic: ${message}`, { param: 'messages' });
}

/** An assistant's tool call as a `tool_use` block; Anthropic wants the arguments as a JSON object. */
function toolUseBlock(call: unknown): AnthropicBlock {
  if (!isRecord(call) || !isRecord(call.function) || typeof call.id !== 'string' || typeof call.function.name !== 'string') {
    throw invalid('assistant tool_calls need an id and a function name.');
  }
  const args = call.function.arguments;
  let input: unknown = {};
  if (typeof args === 'string' && args.trim() !== '') {
    try {
      input = JSON.parse(args);
    } catch {
      throw invalid(`the arguments of tool call ${call.id} are not valid JSON.`);
    }
  } else if (isRecord(args)) input = args;
  if (!isRecord(input)) throw invalid(`the arguments of tool call ${call.id} must be a JSON object.`);
  return { type: 'tool_use', id: upstreamToolCallId(call.id), name: call.function.name, input };
}

function toolResultBlock(message: ChatMessage): AnthropicBlock {
  if (typeof message.tool_call_id !== 'string') throw invalid('tool messages need a tool_call_id.');
  const content = typeof message.content === 'string' ? message.content : contentBlocks(message.content, true);
  return { type: 'tool_result', tool_use_id: upstreamToolCallId(message.tool_call_id), content };
}

function turnOf(message: ChatMessage): AnthropicMessage {
  switch (message.role) {
    case 'user': {
      if (typeof message.content === 'string') return { role: 'user', content: message.content };
      return { role: 'user', content: contentBlocks(message.content, true) };
    }
    case 'assistant': {
      // Claude's own signed thinking handed back (thinking_blocks, see response.ts) leads the turn, as Claude wrote it.
      const blocks = [...thinkingBlocksOf(message.thinking_blocks), ...contentBlocks(message.content, false)];
      // A refusal (OpenAI's structured outputs answer one with content null) is what the assistant said.
      if (blocks.length === 0 && typeof message.refusal === 'string' && message.refusal !== '') blocks.push({ type: 'text', text: message.refusal });
      // A loop, not push(...): spread arguments live on the stack, and a client may send 200 000 tool calls.
      if (Array.isArray(message.tool_calls)) for (const call of message.tool_calls) blocks.push(toolUseBlock(call));
      // A plain text answer stays a string, as clients write it.
      if (typeof message.content === 'string' && blocks.length === 1 && blocks[0]?.type === 'text') return { role: 'assistant', content: message.content };
      return { role: 'assistant', content: blocks };
    }
    case 'tool':
      return { role: 'user', content: [toolResultBlock(message)] };
    default:
      throw invalid(`messages with role '${quoteValue(message.role)}' are not supported.`);
  }
}

/**
 * The thinking blocks an assistant message carries back (`thinking_blocks`, LiteLLM's field): signed thinking and
 * redacted thinking as they came from Claude; anything else in the list is left out (only Claude's own blocks count).
 */
function thinkingBlocksOf(value: unknown): AnthropicBlock[] {
  if (!Array.isArray(value)) return [];
  const blocks: AnthropicBlock[] = [];
  for (const block of value) {
    if (!isRecord(block)) continue;
    if (block.type === 'thinking' && typeof block.thinking === 'string' && typeof block.signature === 'string') blocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature } as AnthropicBlock);
    else if (block.type === 'redacted_thinking' && typeof block.data === 'string') blocks.push({ type: 'redacted_thinking', data: block.data } as AnthropicBlock);
  }
  return blocks;
}

function asBlocks(content: string | AnthropicBlock[]): AnthropicBlock[] {
  return typeof content === 'string' ? (content === '' ? [] : [{ type: 'text', text: content }]) : content;
}

export interface Conversation {
  system: string | AnthropicBlock[] | undefined;
  messages: AnthropicMessage[];
}

/**
 * Canonical messages to Anthropic's: system and developer messages are lifted into the top-level `system`
 * (Anthropic has no system turns), tool results become user `tool_result` blocks, and consecutive turns of
 * the same role are merged because Anthropic requires user and assistant to alternate.
 */
export function conversationOf(input: ChatMessage[]): Conversation {
  const system: AnthropicBlock[] = [];
  const messages: AnthropicMessage[] = [];
  // Block lists built here by merging, appended to in place: copying a turn's blocks at every merge made a run of
  // same-role messages quadratic (40 000 user messages, a 1.2 MB body, held the event loop for 10 s). A turn's own
  // list may be the client's content array, so it is copied once, at its first merge.
  const merged = new Set<AnthropicBlock[]>();
  for (const message of input) {
    if (!isRecord(message)) throw invalid('every message must be an object.');
    if (message.role === 'system' || message.role === 'developer') {
      for (const block of contentBlocks(message.content, false)) system.push(block);
      continue;
    }
    const turn = turnOf(message);
    // An empty turn (an answer that was empty, a blank question) says nothing, and Anthropic refuses one anywhere but
    // last ("all messages must have non-empty content"), which OpenAI takes: it is left out.
    if (turn.content.length === 0) continue;
    const previous = messages.at(-1);
    if (previous && previous.role === turn.role) {
      let blocks = previous.content;
      if (typeof blocks === 'string' || !merged.has(blocks)) {
        blocks = [...asBlocks(blocks)];
        merged.add(blocks);
        previous.content = blocks;
      }
      for (const block of asBlocks(turn.content)) blocks.push(block);
    } else messages.push(turn);
  }
  const plain = system.every((block) => block.cache_control === undefined);
  return {
    system: system.length === 0 ? undefined : plain ? system.map((block) => block.text as string).join('\n\n') : system,
    messages,
  };
}
