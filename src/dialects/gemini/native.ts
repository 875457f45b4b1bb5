import type { NativeAnswer, NativeStreamEvent } from '../../core/canonical.js';
import { bodyShowing, topLevelStringSpan } from '../../wire/json-text.js';
import type { GeminiReplyContext } from './response.js';

/** Whether an answer event carries a Gemini upstream's own answer (native pass-through). */
export function geminiNative(native: NativeAnswer | undefined): NativeAnswer | null {
  return native?.format === 'gemini' ? native : null;
}

/**
 * A Gemini upstream's GenerateContentResponse as the client gets it: exactly as it came (grounding and citation
 * metadata, safety ratings, thought signatures, usage details, fields Google adds later), but for `modelVersion`,
 * which shows the model the client named in the URL, as translated answers do.
 */
export function nativeResponseJson(body: Record<string, unknown>, reply: GeminiReplyContext, text?: string): string {
  // From the upstream's text when there is one: a function call's large integer keeps its digits.
  return bodyShowing(body, 'modelVersion', reply.model, text);
}

/** One stream event's data with its top-level `modelVersion` showing the client's model; the rest is not even parsed. */
function eventData(data: string, shown: string): string {
  const span = topLevelStringSpan(data, 'modelVersion');
  if (span === null) return data;
  const [start, end] = span;
  return data.slice(start, end) === shown ? data : data.slice(0, start) + shown + data.slice(end);
}

/**
 * A Gemini upstream's stream events framed as the client asked: `alt=sse` events (`data: ...` and a blank line, as
 * Gemini writes them), or the pieces of one JSON array (`[`, then `,` between events) for a client that did not ask
 * for SSE; `first` says whether an array piece opens the array.
 */
export function nativeEventsText(events: readonly NativeStreamEvent[], reply: GeminiReplyContext, framing: 'sse' | 'array', first: boolean): string {
  const shown = JSON.stringify(reply.model);
  let out = '';
  let opening = first;
  for (const item of events) {
    const data = eventData(item.data, shown);
    if (framing === 'array') {
      out += `${opening ? '[' : ',\r\n'}${data}`;
      opening = false;
    } else {
      // Data the upstream spread over several `data:` lines was joined with \n (JSON whitespace there): it goes out
      // over as many lines again.
      out += `data: ${data.includes('\n') ? data.replaceAll('\n', '\ndata: ') : data}\r\n\r\n`;
    }
  }
  return out;
}
