import type { ChatCompletion } from '../../core/canonical.js';
import { invalidUpstream } from './errors.js';
import { finishReasonOf } from '../../wire/anthropic/stop-reasons.js';
import { type AnthropicMessageResponse } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { canonicalUsage } from '../../wire/anthropic/usage.js';

function isMessage(body: unknown): body is AnthropicMessageResponse {
  return isRecord(body) && body.type === 'message' && Array.isArray(body.content);
}

/**
 * An Anthropic message as a chat completion: text blocks joined into `content`, `tool_use` blocks as
 * tool_calls, and thinking as `reasoning_content` (the field OpenAI-compatible servers use), never mixed into
 * the answer; signed thinking and redacted thinking also as `thinking_blocks`, as Anthropic wrote them. Server tool
 * blocks have no canonical form and are left out.
 */
export function completionOf(body: unknown, provider: string): ChatCompletion {
  if (!isMessage(body)) throw invalidUpstream(provider, 'an answer that is not an Anthropic message');
  let text = '';
  let reasoning = '';
  const toolCalls: Array<Record<string, unknown>> = [];
  const thinkingBlocks: Array<Record<string, unknown>> = [];
  for (const block of body.content) {
    if (!isRecord(block)) continue;
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'thinking' && typeof block.thinking === 'string') {
      reasoning += block.thinking;
      if (typeof block.signature === 'string' && block.signature !== '') thinkingBlocks.push({ type: 'thinking', thinking: block.thinking, signature: block.signature });
    } else if (block.type === 'redacted_thinking' && typeof block.data === 'string') thinkingBlocks.push({ type: 'redacted_thinking', data: block.data });
    else if (block.type === 'tool_use') {
      toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input ?? {}) } });
    }
  }
  const message: Record<string, unknown> = {
    role: 'assistant',
    // OpenAI answers a pure tool call with null content.
    content: text === '' && toolCalls.length > 0 ? null : text,
    refusal: null,
  };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  if (reasoning !== '') message.reasoning_content = reasoning;
  // The signed blocks themselves (LiteLLM's `thinking_blocks`), for a client that hands them back to Claude, which
  // requires them unchanged on the turn after a tool call with thinking on (see messages.ts).
  if (thinkingBlocks.length > 0) message.thinking_blocks = thinkingBlocks;
  return {
    id: body.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: typeof body.model === 'string' ? body.model : '',
    // Which stop sequence ended the answer (OpenAI's shape has no field for it; vLLM and others add this one).
    choices: [{ index: 0, message, finish_reason: finishReasonOf(body.stop_reason), logprobs: null, ...(body.stop_sequence ? { stop_sequence: body.stop_sequence } : {}) }],
    usage: body.usage ? canonicalUsage(body.usage) : null,
  };
}
