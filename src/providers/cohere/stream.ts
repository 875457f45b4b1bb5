import type { EventSourceMessage } from 'eventsource-parser';
import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletionChunk, ChatCompletionRequest, CompletionUsage } from '../../core/canonical.js';
import type { StreamDecoder } from '../../core/provider.js';
import { createSSEDecoder } from '../sse-decoder.js';
import { cohereStreamError } from './errors.js';
import { cohereUsage, finishReason, stopSequenceMark } from './response.js';
import { chunkLogprobsFromCohere } from './logprobs.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

/**
 * Cohere's v2 stream (SSE, `event: <type>` plus `data: {"type": ...}`) -> OpenAI chat.completion.chunks.
 * A reasoning model's thinking (content blocks of type `thinking`) goes out as `reasoning_content` deltas.
 * `message-end` carries the finish reason and usage and is the end marker; a `data: [DONE]` after it is
 * tolerated. Text, tool-plan text and tool-call arguments are relayed as they arrive, never buffered.
 * Usage comes as OpenAI's last chunk without choices when the client asked for include_usage; otherwise it is
 * only reported to the gateway through `end()` (and `usageSoFar`, for a message-end that fails the stream).
 */

type Json = Record<string, unknown>;

function invalid(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

function deltaMessage(event: Json): Json {
  const delta = isRecord(event.delta) ? event.delta : {};
  return isRecord(delta.message) ? delta.message : {};
}

export function createCohereStreamDecoder(provider: string, model: string, request?: ChatCompletionRequest): StreamDecoder {
  const usageChunk = request?.stream_options?.include_usage === true;
  let usage: CompletionUsage | null = null;
  let id = `chatcmpl-${Date.now()}`;
  const created = Math.floor(Date.now() / 1000);
  let ended = false;
  let started = false;
  /** Cohere's event index -> the OpenAI tool_calls index (tool calls counted from 0). */
  const toolIndexes = new Map<number, number>();
  let lastToolIndex = -1;

  const chunk = (choices: unknown[], extra: Json = {}): ChatCompletionChunk => ({ id, object: 'chat.completion.chunk', created, model, choices, ...extra });
  const delta = (d: Json, finish: string | null = null, logprobs: unknown = null): ChatCompletionChunk => chunk([{ index: 0, delta: d, logprobs, finish_reason: finish }]);
  const opening = (): ChatCompletionChunk[] => {
    if (started) return [];
    started = true;
    return [delta({ role: 'assistant', content: '' })];
  };
  const text = (value: unknown, logprobs: unknown = null): ChatCompletionChunk[] => (typeof value === 'string' && value !== '' ? [...opening(), delta({ content: value }, null, logprobs)] : opening());

  const map = (event: Json): ChatCompletionChunk[] | null => {
    const type = event.type;
    const message = deltaMessage(event);
    switch (type) {
      case 'message-start':
        if (typeof event.id === 'string' && event.id) id = event.id;
        return opening();
      case 'content-start':
      case 'content-delta': {
        const content = isRecord(message.content) ? message.content : {};
        // A reasoning model's thinking block comes as content with `thinking` in place of `text`.
        if (typeof content.thinking === 'string') return content.thinking === '' ? opening() : [...opening(), delta({ reasoning_content: content.thinking })];
        // The text's log probabilities, when asked for, come on its content-delta event (`logprobs`, one LogprobItem).
        return text(content.text, type === 'content-delta' ? chunkLogprobsFromCohere(event.logprobs) : null);
      }
      case 'tool-plan-delta':
        return text(message.tool_plan);
      case 'tool-call-start': {
        const call = isRecord(message.tool_calls) ? message.tool_calls : {};
        const fn = isRecord(call.function) ? call.function : {};
        const index = toolIndexes.size;
        toolIndexes.set(typeof event.index === 'number' ? event.index : index, index);
        lastToolIndex = index;
        const args = typeof fn.arguments === 'string' ? fn.arguments : '';
        return [...opening(), delta({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: fn.name, arguments: args } }] })];
      }
      case 'tool-call-delta': {
        const call = isRecord(message.tool_calls) ? message.tool_calls : {};
        const fn = isRecord(call.function) ? call.function : {};
        if (typeof fn.arguments !== 'string' || fn.arguments === '') return null;
        const index = (typeof event.index === 'number' ? toolIndexes.get(event.index) : undefined) ?? lastToolIndex;
        if (index < 0) throw invalid(provider, 'tool-call arguments before any tool-call-start');
        return [delta({ tool_calls: [{ index, function: { arguments: fn.arguments } }] })];
      }
      case 'message-end': {
        const end = isRecord(event.delta) ? event.delta : {};
        // Read before the finish reason, which fails the stream on ERROR or TIMEOUT: Cohere bills a generation that
        // broke off too, and `usageSoFar` hands its count to the gateway so that is what is charged, not an estimate.
        usage = cohereUsage(end.usage);
        const finish = finishReason(provider, end.finish_reason, end.error);
        ended = true;
        const out = [...opening(), delta({}, finish)];
        Object.assign(out.at(-1)?.choices[0] as object, stopSequenceMark(end.finish_reason));
        if (usage && usageChunk) out.push(chunk([], { usage }));
        return out;
      }
      default:
        // content-end, tool-call-end, citation-start/-end, debug: nothing an OpenAI client receives.
        return null;
    }
  };

  const inner = createSSEDecoder((event: EventSourceMessage) => {
    if (ended || event.data === '[DONE]') return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(event.data);
    } catch {
      throw invalid(provider, 'a stream event that is not JSON');
    }
    if (!isRecord(parsed)) return null;
    if (typeof parsed.type !== 'string') {
      // An error object in place of an event: `{"message": "..."}`.
      if (typeof parsed.message === 'string' || event.event === 'error') throw cohereStreamError(provider, event.data);
      return map({ ...parsed, type: event.event });
    }
    return map(parsed);
  });

  return {
    push: (bytes) => inner.push(bytes),
    end() {
      const tail = inner.end();
      return { chunks: tail.chunks, complete: ended, usage };
    },
    usageSoFar: () => usage,
  };
}
