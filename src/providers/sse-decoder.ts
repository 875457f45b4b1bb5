import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ChatCompletionChunk } from '../core/canonical.js';
import type { StreamDecoder } from '../core/provider.js';

/**
 * Decodes a Server-Sent Events body incrementally. `mapEvent` turns one SSE event into canonical chunks and
 * returns 'done' when the event is the stream's terminator. UTF-8 sequences split across network reads are
 * reassembled by the streaming TextDecoder.
 */
export function createSSEDecoder(
  mapEvent: (event: EventSourceMessage) => ChatCompletionChunk[] | ChatCompletionChunk | 'done' | null,
): StreamDecoder {
  const text = new TextDecoder();
  let pending: ChatCompletionChunk[] = [];
  let done = false;
  let failure: unknown = null;
  const parser = createParser({
    onEvent(event) {
      if (done || failure) return;
      try {
        const mapped = mapEvent(event);
        if (mapped === 'done') done = true;
        else if (Array.isArray(mapped)) pending.push(...mapped);
        else if (mapped) pending.push(mapped);
      } catch (err) {
        failure = err;
      }
    },
  });
  const drain = (): ChatCompletionChunk[] => {
    if (failure) throw failure;
    const out = pending;
    pending = [];
    return out;
  };
  return {
    push(bytes) {
      parser.feed(text.decode(bytes, { stream: true }));
      return drain();
    },
    end() {
      parser.feed(text.decode());
      // Flush a last event that the upstream sent without its closing blank line.
      parser.feed('\n\n');
      return { chunks: drain(), complete: done };
    },
  };
}
