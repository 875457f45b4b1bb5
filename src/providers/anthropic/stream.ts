import type { EventSourceMessage } from 'eventsource-parser';
import type { ChatCompletionChunk, ChatCompletionRequest, CompletionUsage } from '../../core/canonical.js';
import type { StreamDecoder } from '../../core/provider.js';
import { createSSEDecoder } from '../sse-decoder.js';
import { KeptEvents } from '../kept-events.js';
import { invalidUpstream, streamError } from './errors.js';
import { withChanges, type GatewayError } from '../../core/errors.js';
import { anthropicError, gatewayTypeOf, isAnthropicErrorType } from '../../wire/anthropic/errors.js';
import { finishReasonOf } from '../../wire/anthropic/stop-reasons.js';
import { type AnthropicUsage } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { canonicalUsage } from '../../wire/anthropic/usage.js';

type Delta = Record<string, unknown>;

/** The events of an answer, all of which come after its message_start. */
const ANSWER_EVENTS = new Set(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);

/**
 * Decodes Anthropic's stream (message_start, content_block_start/delta/stop, message_delta, message_stop,
 * ping, error) into chat.completion.chunks as the events arrive: text deltas as content, thinking deltas as
 * reasoning_content, and a tool's input_json_delta fragments as tool_call argument deltas, unbuffered.
 * The stream is complete only once message_stop arrived.
 *
 * Usage: input and cache counts come from message_start, the output count from message_delta (cumulative).
 * When the request asked for include_usage it comes as OpenAI's last chunk with no choices. Otherwise, and
 * when the request is not at hand, the finish chunk carries it: the gateway still learns the real counts (for
 * cost and budgets), and a client that did not ask never meets a chunk without choices. What was counted before
 * message_stop is `usageSoFar`, for charging a stream cut short; it makes no chunk.
 */
export interface AnthropicDecoderOptions {
  /** Native pass-through: keep every event as it came (name and data text) for `takeNative`. */
  keepEvents?: boolean;
}

/**
 * An `error` event inside an open stream (see streamError). An error type the gateway does not know (one Anthropic
 * added later) is kept as the error's type as well as its code, as gatewayTypeOf keeps an unknown type of an error
 * answer: that is how an Anthropic client is shown it as written (see anthropicErrorBody), not as api_error.
 */
function midStreamError(provider: string, data: string): GatewayError {
  const error = streamError(provider, data);
  const type = anthropicError(data)?.type;
  if (type === undefined || isAnthropicErrorType(type)) return error;
  return withChanges(error, { type: gatewayTypeOf(type) });
}

export function createAnthropicStreamDecoder(provider: string, request?: ChatCompletionRequest, options: AnthropicDecoderOptions = {}): StreamDecoder {
  const created = Math.floor(Date.now() / 1000);
  /** The events kept for `takeNative`; null when not passing through. */
  const kept = options.keepEvents === true ? new KeptEvents() : null;
  let id = '';
  let model = '';
  let usage: AnthropicUsage = {};
  /** `usage` in the canonical shape, as of the last event that reported some; null before any did. */
  let reported: CompletionUsage | null = null;
  let finishReason: string | null = null;
  let stopped = false;
  /** A valid message_start arrived: without one the stream holds no answer, however it ends. */
  let begun = false;
  /** Anthropic block index → OpenAI tool_calls index, for tool_use blocks only. */
  const toolIndex = new Map<number, number>();
  /** Thinking blocks open by index: their text and signature, so each goes out whole (thinking_blocks) at its stop. */
  const thinking = new Map<number, { thinking: string; signature: string }>();
  /** Tool calls whose arguments have not had a single character yet. */
  const noArguments = new Set<number>();
  const usageChunk = request?.stream_options?.include_usage === true;
  /** The stop sequence that ended the answer, passed on beside finish_reason `stop`. */
  let stopSequence: string | null = null;

  const chunk = (delta: Delta, finish: string | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });

  const parse = (data: string): Record<string, unknown> => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      throw invalidUpstream(provider, 'a stream event that is not JSON');
    }
    if (!isRecord(parsed)) throw invalidUpstream(provider, 'a stream event that is not an object');
    return parsed;
  };

  const onEvent = (event: EventSourceMessage): ChatCompletionChunk[] | null => {
    if (stopped) return null;
    const type = event.event ?? '';
    if (type === 'ping') {
      kept?.push(type, event.data);
      return null;
    }
    if (type === 'error') throw midStreamError(provider, event.data);
    const data = parse(event.data);
    kept?.push(type !== '' ? type : String(data.type), event.data);
    const kind = data.type ?? type;
    // Every answer opens with its message_start: a stream that goes on (or ends) without one, or whose message is not
    // an object, is a bad upstream answer (a failed attempt another target may take), never an empty answer.
    if (!begun && ANSWER_EVENTS.has(kind as string) && !(kind === 'message_start' && isRecord(data.message))) {
      throw invalidUpstream(provider, kind === 'message_start' ? 'a message_start event without its message' : `a stream whose ${String(kind)} came before any message_start`);
    }
    switch (kind) {
      case 'message_start': {
        begun = true;
        const message = data.message as Record<string, unknown>;
        id = typeof message.id === 'string' ? message.id : id;
        model = typeof message.model === 'string' ? message.model : model;
        if (isRecord(message.usage)) {
          usage = { ...message.usage };
          reported = canonicalUsage(usage);
        }
        return [chunk({ role: 'assistant', content: '' })];
      }
      case 'content_block_start':
        return blockStart(data);
      case 'content_block_delta':
        return blockDelta(data);
      case 'content_block_stop':
        return blockStop(data);
      case 'message_delta': {
        const delta = isRecord(data.delta) ? data.delta : {};
        if (isRecord(data.usage)) {
          // Counts here are cumulative; a field left out keeps message_start's value. Objects of counts too:
          // server_tool_use (the searches, billed each) is known only here.
          for (const [key, value] of Object.entries(data.usage)) if (typeof value === 'number' || isRecord(value)) usage[key] = value;
          reported = canonicalUsage(usage);
        }
        if (delta.stop_reason !== undefined && delta.stop_reason !== null) finishReason = finishReasonOf(delta.stop_reason);
        if (typeof delta.stop_sequence === 'string') stopSequence = delta.stop_sequence;
        return null;
      }
      case 'message_stop':
        stopped = true;
        return closing();
      case 'error':
        throw midStreamError(provider, event.data);
      default:
        // Event types added later change nothing for the client.
        return null;
    }
  };

  const blockStart = (data: Record<string, unknown>): ChatCompletionChunk[] | null => {
    const block = isRecord(data.content_block) ? data.content_block : {};
    const index = typeof data.index === 'number' ? data.index : -1;
    if (block.type === 'tool_use') {
      const position = toolIndex.size;
      toolIndex.set(index, position);
      noArguments.add(position);
      return [chunk({ tool_calls: [{ index: position, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] })];
    }
    if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') return [chunk({ content: block.text })];
    if (block.type === 'thinking') thinking.set(index, { thinking: typeof block.thinking === 'string' ? block.thinking : '', signature: '' });
    // Redacted thinking has no text to stream: the block goes out whole (see thinking_blocks in response.ts).
    if (block.type === 'redacted_thinking' && typeof block.data === 'string') return [chunk({ thinking_blocks: [{ type: 'redacted_thinking', data: block.data }] })];
    return null;
  };

  const blockDelta = (data: Record<string, unknown>): ChatCompletionChunk[] | null => {
    const delta = isRecord(data.delta) ? data.delta : {};
    switch (delta.type) {
      case 'text_delta':
        return typeof delta.text === 'string' && delta.text !== '' ? [chunk({ content: delta.text })] : null;
      case 'thinking_delta': {
        if (typeof delta.thinking !== 'string' || delta.thinking === '') return null;
        const open = thinking.get(typeof data.index === 'number' ? data.index : -1);
        if (open) open.thinking += delta.thinking;
        return [chunk({ reasoning_content: delta.thinking })];
      }
      case 'signature_delta': {
        const open = thinking.get(typeof data.index === 'number' ? data.index : -1);
        if (open && typeof delta.signature === 'string') open.signature += delta.signature;
        return null;
      }
      case 'input_json_delta': {
        const position = toolIndex.get(typeof data.index === 'number' ? data.index : -1);
        if (position === undefined || typeof delta.partial_json !== 'string' || delta.partial_json === '') return null;
        noArguments.delete(position);
        return [chunk({ tool_calls: [{ index: position, function: { arguments: delta.partial_json } }] })];
      }
      default:
        // Citations carry nothing the canonical stream can hold.
        return null;
    }
  };

  /** A tool called without input streams no JSON at all; clients parse the arguments, so they get `{}`. */
  const blockStop = (data: Record<string, unknown>): ChatCompletionChunk[] | null => {
    // A signed thinking block goes out whole once its signature is in (the text already went as reasoning_content).
    const thought = thinking.get(typeof data.index === 'number' ? data.index : -1);
    if (thought) {
      thinking.delete(data.index as number);
      return thought.signature === '' ? null : [chunk({ thinking_blocks: [{ type: 'thinking', thinking: thought.thinking, signature: thought.signature }] })];
    }
    const position = toolIndex.get(typeof data.index === 'number' ? data.index : -1);
    if (position === undefined || !noArguments.delete(position)) return null;
    return [chunk({ tool_calls: [{ index: position, function: { arguments: '{}' } }] })];
  };

  const closing = (): ChatCompletionChunk[] => {
    const finish = chunk({}, finishReason ?? 'stop');
    if (stopSequence !== null) Object.assign(finish.choices[0] as object, { stop_sequence: stopSequence });
    const counted = canonicalUsage(usage);
    if (!usageChunk) return [{ ...finish, usage: counted }];
    return [finish, { id, object: 'chat.completion.chunk', created, model, choices: [], usage: counted }];
  };

  const sse = createSSEDecoder(onEvent);
  const decoder: StreamDecoder = {
    push: (bytes) => sse.push(bytes),
    end() {
      const tail = sse.end();
      return { chunks: tail.chunks, complete: stopped };
    },
    usageSoFar: () => reported,
  };
  if (kept !== null) decoder.takeNative = () => kept.take();
  return decoder;
}
