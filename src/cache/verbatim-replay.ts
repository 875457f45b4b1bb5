import type { ChatCompletion, ResponseEvent } from '../core/canonical.js';
import { createChunkReader } from '../providers/openai-compatible/stream-chunk.js';
import type { CachedNative } from './cache-store.js';

/**
 * A hit for a client that reads the upstream's own format (an OpenAI client of an OpenAI-format provider) is served
 * what the miss that stored it served: the provider's text, as it came but for the model name (the dialect writes
 * it), with fields tollgate does not model, the numbers' own digits and a stream's own chunks. The canonical events
 * they ride on are what the stages after the cache read (output guardrails; one that rewrites drops the text).
 */

/** The whole answer, with its stored text; null when it was stored as a stream (then served from the canonical answer). */
export function verbatimCompletion(native: CachedNative, answer: ChatCompletion): ResponseEvent | null {
  if (native.text === undefined) return null;
  return { kind: 'completion', completion: answer, native: { format: native.format, text: native.text } };
}

/**
 * The stream's chunks, each read again from its stored event as the OpenAI-format decoder read it and carrying
 * that event's text; null when it was stored whole (then replayed from the canonical answer) or an event is not a
 * JSON object's text. Read as they go out: a long answer's tens of thousands of events, read all before the first
 * went out, held the event loop for a quarter of a second (50,000 events, 12 MB). The miss stored only events the
 * decoder had read as chunks, so one that no longer does is a damaged record: the replay fails there.
 */
export function verbatimChunks(native: CachedNative, model: string): Iterable<ResponseEvent> | null {
  const events = native.events;
  if (!events) return null;
  for (const event of events) if (!looksLikeObject(event.data)) return null;
  return {
    *[Symbol.iterator](): Generator<ResponseEvent> {
      const read = createChunkReader();
      for (const event of events) {
        const record = JSON.parse(event.data) as unknown;
        if (!record || typeof record !== 'object' || !Array.isArray((record as { choices?: unknown }).choices)) {
          throw new Error('a cached stream event does not read back as a chunk (the cache entry is damaged)');
        }
        const chunk = read(record as Record<string, unknown>);
        // As the call stage relays a chunk: the name the client asked for (the dialect shows it in the text too).
        chunk.model = model;
        yield { kind: 'chunk', chunk, native: { format: native.format, text: event.data } };
      }
    },
  };
}

/** Whether `text` is written as a JSON object (`{` ... `}`, spaces around allowed): a check that reads two characters. */
function looksLikeObject(text: string): boolean {
  const trimmed = text.trim();
  return trimmed.startsWith('{') && trimmed.endsWith('}');
}
