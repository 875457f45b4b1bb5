import type { ChatCompletionChunk } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { flattenChoices } from './content-parts.js';
import { normalizeFinishReasons } from './finish-reasons.js';
import { createToolCallNumbering } from './tool-call-indexes.js';

/**
 * Groq's chunks have no `usage`: the usage of a streamed request comes on its final chunk as `x_groq.usage`
 * (ChatCompletionChunk.XGroq in Groq's API spec), and Groq does not use `stream_options`. It becomes the chunk's
 * usage, so the gateway charges Groq's own count; the client's bytes, when passed through, stay as Groq sent them.
 */
function liftGroqUsage(record: Record<string, unknown>): void {
  if (record.usage !== undefined && record.usage !== null) return;
  const groq = record.x_groq;
  if (isRecord(groq) && isRecord(groq.usage)) record.usage = groq.usage;
}

/**
 * Reads one stream's events, parsed and checked to have a list of choice objects, into the canonical chunks the
 * stages see (Groq's usage lifted, content parts flattened, vendors' finish reasons in OpenAI's words, tool calls
 * numbered across the stream): one reader per stream. The response cache reads a stored stream's events with it
 * again, so a hit's chunks are a miss's.
 */
export function createChunkReader(): (record: Record<string, unknown>) => ChatCompletionChunk {
  const numberToolCalls = createToolCallNumbering();
  return (record) => {
    liftGroqUsage(record);
    flattenChoices(record.choices as unknown[], 'delta');
    normalizeFinishReasons(record.choices as unknown[]);
    numberToolCalls(record.choices as unknown[]);
    return record as unknown as ChatCompletionChunk;
  };
}
