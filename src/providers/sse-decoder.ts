import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ChatCompletionChunk } from '../core/canonical.js';
import type { StreamDecoder } from '../core/provider.js';

/**
 * Decodes a Server-Sent Events body incrementally. `mapEvent` turns one SSE event into canonical chunks and
 * returns 'done' when the event is the stream's terminator. UTF-8 sequences split across network reads are
 * reassembled (see `utf8Reads`). An event `mapEvent` throws on (an upstream's `error` event) ends the decoding: that
 * call throws it, and the chunks decoded before it in the same read go with it (see `chunksBefore`).
 */
export function createSSEDecoder(
  mapEvent: (event: EventSourceMessage) => ChatCompletionChunk[] | ChatCompletionChunk | 'done' | null,
): StreamDecoder {
  const text = utf8Reads();
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
    const out = pending;
    pending = [];
    if (failure) throw withChunksBefore(failure, out);
    return out;
  };
  return {
    push(bytes) {
      parser.feed(text.decode(bytes));
      return drain();
    },
    end() {
      parser.feed(text.end());
      // Flush a last event that the upstream sent without its closing blank line.
      parser.feed('\n\n');
      return { chunks: drain(), complete: done };
    },
  };
}

/** The chunks decoded ahead of the event that failed a decoder, by the failure it threw (see chunksBefore). */
const decodedBefore = new WeakMap<object, ChatCompletionChunk[]>();

/** Notes the chunks a read decoded before `failure` on it, so they are not lost with the read (see chunksBefore). */
function withChunksBefore(failure: unknown, chunks: ChatCompletionChunk[]): unknown {
  if (chunks.length > 0 && typeof failure === 'object' && failure !== null) decodedBefore.set(failure, chunks);
  return failure;
}

/**
 * The chunks decoded in the same read as the event that raised `failure` (an upstream's `error` event after two
 * deltas in one network read), once: they came first, so the caller relays them before it reports the failure.
 * Empty for a failure no decoder raised, or raised with nothing before it.
 */
export function chunksBefore(failure: unknown): ChatCompletionChunk[] {
  if (typeof failure !== 'object' || failure === null) return [];
  const chunks = decodedBefore.get(failure) ?? [];
  decodedBefore.delete(failure);
  return chunks;
}

/** The byte order mark, which an event stream may start with and which is not part of its first line (WHATWG). */
const BOM = 0xfeff;

/**
 * The text of a body's reads, in order, as a streaming TextDecoder gives it: a character split between two reads is
 * joined, an invalid sequence becomes U+FFFD, a leading byte order mark is dropped. A read that ends in an ASCII
 * byte (an event stream's reads end with a line break) holds no partial character, so while every read so far has,
 * each is decoded on its own (one native call); a StringDecoder, which keeps the bytes of a split character, takes
 * over from the first read that does not. (A TextDecoder made per stream cost several µs in its ICU converter.)
 */
function utf8Reads(): { decode(bytes: Buffer): string; end(): string } {
  let split: StringDecoder | null = null;
  let started = false;
  const first = (text: string): string => {
    if (started || text === '') return text;
    started = true;
    return text.charCodeAt(0) === BOM ? text.slice(1) : text;
  };
  return {
    decode(bytes) {
      if (split === null && (bytes.length === 0 || (bytes[bytes.length - 1] as number) < 0x80)) return first(bytes.toString('utf8'));
      split ??= new StringDecoder('utf8');
      return first(split.write(bytes));
    },
    end() {
      return first(split?.end() ?? '');
    },
  };
}
