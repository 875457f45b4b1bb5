import type { ChatCompletionChunk, CompletionUsage } from '../../core/canonical.js';
import { withFields } from '../../core/with-fields.js';

/**
 * OpenAI's usage rules for a streamed chat completion, applied to streams tollgate translated from another
 * vendor's format (Anthropic, Gemini, Bedrock, Cohere, ...):
 * - with `stream_options.include_usage`, every chunk carries `"usage": null` and one last chunk, with
 *   `choices: []`, carries the usage, just before `data: [DONE]`;
 * - without it, no chunk has a `usage` key at all (and there is no usage-only chunk).
 * Decoders differ in where they put usage (on the finish chunk, in a usage-only chunk, only in `end()`); one rule
 * here makes them all look like OpenAI's own stream. An OpenAI-format upstream's stream is left as it came.
 * Chunks are copied, never changed in place: the gateway's own record of the usage (`ctx.usage`, read by the
 * cost stage) and the pipeline's chunks stay as they were.
 */

/** Wire formats whose streams are OpenAI's own format, from the provider itself: passed through unchanged. */
const OPENAI_WIRE_FORMATS: ReadonlySet<string> = new Set(['openai', 'azure']);

/** Whether a stream from a provider of this wire format is a translation that the usage rules must shape. */
export function needsUsageShaping(format: string): boolean {
  return !OPENAI_WIRE_FORMATS.has(format);
}

export interface StreamUsageShaper {
  /** The chunk as the client gets it, or null when it is held back (a usage-only chunk goes out last). */
  shape(chunk: ChatCompletionChunk): ChatCompletionChunk | null;
  /**
   * The usage chunk to send after every other chunk, or null when the client did not ask for one. `known` is
   * the usage the gateway recorded, used when the decoder did not put the usage into a chunk of its own.
   */
  final(known: CompletionUsage | null): ChatCompletionChunk | null;
}

/** The chunk without its `usage` key (a copy). */
export function withoutUsage(chunk: ChatCompletionChunk): ChatCompletionChunk {
  const { usage: _usage, ...rest } = chunk;
  return rest as ChatCompletionChunk;
}

export function createStreamUsageShaper(includeUsage: boolean): StreamUsageShaper {
  let held: ChatCompletionChunk | null = null;
  let seen: CompletionUsage | null = null;
  let last: ChatCompletionChunk | null = null;
  return {
    shape(chunk) {
      if (chunk.choices.length === 0 && chunk.usage) {
        held = chunk;
        return null;
      }
      last = chunk;
      if (!includeUsage) return 'usage' in chunk ? withoutUsage(chunk) : chunk;
      if (chunk.usage === null) return chunk;
      if (chunk.usage) seen = chunk.usage;
      return withFields(chunk, { usage: null });
    },
    final(known) {
      if (!includeUsage) return null;
      if (held) return held;
      const usage = seen ?? known;
      if (!usage || !last) return null;
      return { id: last.id, object: 'chat.completion.chunk', created: last.created, model: last.model, choices: [], usage };
    },
  };
}
