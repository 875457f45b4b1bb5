import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ChatCompletionChunk } from '../core/canonical.js';
import type { StreamDecoder } from '../core/provider.js';

/**
 * Decodes a Server-Sent Events body incrementally. `mapEvent` turns one SSE event into canonical chunks and
 * returns 'done' when the event is the stream's terminator. UTF-8 sequences split across network reads are
 * reassembled (see `utf8Reads`).
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
    if (failure) throw failure;
    const out = pending;
    pending = [];
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
