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
 * that event's text; null when it was stored whole (then replayed from the canonical answer) or an event does not
 * read back as a chunk.
 */
export function verbatimChunks(native: CachedNative, model: string): ResponseEvent[] | null {
  if (!native.events) return null;
  const read = createChunkReader();
  const out: ResponseEvent[] = [];
  for (const event of native.events) {
    let record: unknown;
    try {
      record = JSON.parse(event.data);
    } catch {
      return null;
    }
    if (!record || typeof record !== 'object' || !Array.isArray((record as { choices?: unknown }).choices)) return null;
    const chunk = read(record as Record<string, unknown>);
    // As the call stage relays a chunk: the name the client asked for (the dialect shows it in the text too).
    chunk.model = model;
    out.push({ kind: 'chunk', chunk, native: { format: native.format, text: event.data } });
  }
  return out;
}
