import type { ChatCompletion } from '../../core/canonical.js';
import { messageId, toolUseId } from './ids.js';
import { type AnthropicMessageOut, type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { matchedStopSequence, stopReasonOf } from '../../wire/anthropic/stop-reasons.js';
import { anthropicUsage } from '../../wire/anthropic/usage.js';

/** What the reply needs from the request: the model name the client sent and its stop sequences. */
export interface ReplyContext {
  model: string;
  stopSequences: readonly string[];
}

/**
 * Tool arguments as the object Anthropic's `input` must be. Models occasionally emit arguments that are not a
 * JSON object; the client then gets them under `_raw` rather than losing them.
 */
export function toolInput(args: unknown): Json {
  if (isRecord(args)) return args;
  if (typeof args !== 'string' || args.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return isRecord(parsed) ? parsed : { _raw: args };
  } catch {
    return { _raw: args };
  }
}

function reasoningOf(message: Json): string {
  const value = message.reasoning_content ?? message.reasoning;
  return typeof value === 'string' ? value : '';
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

/**
 * A canonical completion as an Anthropic Message: reasoning as a thinking block first (as Anthropic orders
 * them), then the text, then one tool_use block per tool call. The signature of a thinking block that did not
 * come from Anthropic is empty: there is nothing to sign it with.
 */
export function anthropicMessage(completion: ChatCompletion, reply: ReplyContext): AnthropicMessageOut {
  const choice = isRecord(completion.choices[0]) ? completion.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const content: Json[] = [];
  const reasoning = reasoningOf(message);
  if (reasoning !== '') content.push({ type: 'thinking', thinking: reasoning, signature: '' });
  const text = textOf(message.content) || (typeof message.refusal === 'string' ? message.refusal : '');
  if (text !== '') content.push({ type: 'text', text });
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls : [];
  for (const call of calls) {
    if (!isRecord(call) || !isRecord(call.function)) continue;
    const id = typeof call.id === 'string' && call.id !== '' ? call.id : toolUseId();
    content.push({ type: 'tool_use', id, name: call.function.name, input: toolInput(call.function.arguments) });
  }
  const stopSequence = matchedStopSequence(choice, reply.stopSequences);
  const stopReason = stopReasonOf(choice.finish_reason, stopSequence);
  return {
    id: messageId(completion.id),
    type: 'message',
    role: 'assistant',
    model: reply.model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopReason === 'stop_sequence' ? stopSequence : null,
    usage: anthropicUsage(completion.usage),
  };
}
