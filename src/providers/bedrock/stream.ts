import type { ChatCompletionChunk, CompletionUsage } from '../../core/canonical.js';
import { GatewayError } from '../../core/errors.js';
import type { StreamDecoder } from '../../core/provider.js';
import { EventStreamReader, invalidStream } from './event-stream.js';
import { completionId, finishReason, stopSequenceReached, unmetStopReason, usageFromConverse } from './response.js';
import { isRecord } from '../../core/is-record.js';

/**
 * Decodes ConverseStream's `application/vnd.amazon.eventstream` body: binary frames (CRC-checked by the codec),
 * possibly split across network reads, each carrying one JSON event named by its `:event-type` header.
 * Tool arguments are relayed as the partial JSON strings arrive. Usage becomes OpenAI's usage-only chunk when
 * the client asked for it (`stream_options.include_usage`), else it is only reported to the gateway by `end()`.
 */
export function createConverseStreamDecoder(provider: string, model: string, includeUsage: boolean): StreamDecoder {
  const id = completionId();
  const created = Math.floor(Date.now() / 1000);
  let started = false;
  let stopped = false;
  let failure: GatewayError | null = null;
  let usage: CompletionUsage | null = null;
  /** Converse content block index → OpenAI tool_calls index. */
  const toolIndexes = new Map<number, number>();
  /** Tool-use blocks started and given no input yet: their arguments are `{}` when they stop so (as OpenAI sends them). */
  const withoutInput = new Set<number>();

  const chunk = (delta: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }],
  });

  function start(out: ChatCompletionChunk[]): void {
    if (started) return;
    started = true;
    out.push(chunk({ role: 'assistant', content: '' }));
  }

  function toolIndex(block: number): number {
    let index = toolIndexes.get(block);
    if (index === undefined) {
      index = toolIndexes.size;
      toolIndexes.set(block, index);
    }
    return index;
  }

  function onEvent(type: string, event: Record<string, unknown>, out: ChatCompletionChunk[]): void {
    const block = typeof event.contentBlockIndex === 'number' ? event.contentBlockIndex : 0;
    switch (type) {
      case 'messageStart':
        start(out);
        return;
      case 'contentBlockStart': {
        const use = isRecord(event.start) && isRecord(event.start.toolUse) ? event.start.toolUse : null;
        if (!use) return;
        start(out);
        const call = { index: toolIndex(block), id: String(use.toolUseId ?? ''), type: 'function', function: { name: String(use.name ?? ''), arguments: '' } };
        withoutInput.add(block);
        out.push(chunk({ tool_calls: [call] }));
        return;
      }
      case 'contentBlockStop':
        // A tool that takes no arguments stops without an input delta: `""` is not JSON, and clients parse it.
        if (withoutInput.delete(block)) out.push(chunk({ tool_calls: [{ index: toolIndex(block), function: { arguments: '{}' } }] }));
        return;
      case 'contentBlockDelta': {
        const delta = isRecord(event.delta) ? event.delta : {};
        start(out);
        if (typeof delta.text === 'string') out.push(chunk({ content: delta.text }));
        else if (isRecord(delta.toolUse) && typeof delta.toolUse.input === 'string') {
          if (delta.toolUse.input !== '') withoutInput.delete(block);
          out.push(chunk({ tool_calls: [{ index: toolIndex(block), function: { arguments: delta.toolUse.input } }] }));
        } else if (isRecord(delta.reasoningContent) && typeof delta.reasoningContent.text === 'string') {
          out.push(chunk({ reasoning_content: delta.reasoningContent.text }));
        }
        return;
      }
      case 'messageStop':
        start(out);
        stopped = true;
        out.push(chunk({}, finishReason(event.stopReason)));
        if (unmetStopReason(event.stopReason) !== null) Object.assign(out.at(-1)?.choices[0] as object, { native_finish_reason: event.stopReason });
        if (stopSequenceReached(event.stopReason)) Object.assign(out.at(-1)?.choices[0] as object, { stopped_at_stop_sequence: true });
        return;
      case 'metadata': {
        usage = usageFromConverse(event.usage);
        if (usage && includeUsage) out.push({ id, object: 'chat.completion.chunk', created, model, choices: [], usage });
        return;
      }
      default:
        return;
    }
  }

  /** The chunks of the frames read by the current push (or end). */
  let out: ChatCompletionChunk[] = [];
  const reader = new EventStreamReader(provider, (type, payload) => {
    let event: unknown;
    try {
      event = payload === '' ? {} : JSON.parse(payload);
    } catch {
      throw invalidStream(provider, 'an event that is not JSON');
    }
    if (isRecord(event)) onEvent(type, event, out);
  });

  function drain(bytes: Buffer): ChatCompletionChunk[] {
    out = [];
    try {
      reader.push(bytes);
    } catch (err) {
      failure = err instanceof GatewayError ? err : invalidStream(provider, 'an unreadable event stream');
      // Whatever was decoded before the failure still reaches the client; the failure ends the stream next.
      if (out.length === 0) throw failure;
    }
    return out;
  }

  return {
    push(bytes) {
      if (failure) throw failure;
      return drain(bytes);
    },
    end() {
      if (failure) throw failure;
      const chunks = drain(Buffer.alloc(0));
      if (failure) throw failure;
      // messageStop is the answer's last event; metadata (usage) follows it but carries no answer.
      return { chunks, complete: stopped && reader.pendingBytes === 0, usage };
    },
  };
}
