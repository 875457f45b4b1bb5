import type { NativeAnswer } from '../../core/canonical.js';
import { topLevelStringSpan } from '../../wire/json-text.js';

/** `text` with its top-level `model` string showing `model`; null when it has none. */
function withModel(text: string, shown: string): string | null {
  const span = topLevelStringSpan(text, 'model');
  if (span === null) return null;
  const [start, end] = span;
  return text.slice(start, end) === shown ? text : text.slice(0, start) + shown + text.slice(end);
}

/**
 * An OpenAI-format upstream's whole answer (a completion, embeddings) exactly as it came but for `model`, which
 * shows the name the client sent; null when there is none (or no such text): the caller then serialises its parse.
 */
export function openAINativeJson(native: NativeAnswer | undefined, model: string): string | null {
  const text = native?.format === 'openai' ? native.text : undefined;
  return text === undefined ? null : withModel(text, JSON.stringify(model));
}

/**
 * Writes an OpenAI-format upstream's own stream events (one per chunk, `NativeAnswer.text`) in SSE framing, exactly
 * as they came but for `model`, which shows the name the client sent (as every answer does), whichever upstream
 * model served it. A frame is null when the event has no top-level `model` string to show it in: the caller then
 * writes the chunk rendered from the canonical one. One framer per stream: an upstream repeats the same leading
 * fields (id, object, created, model) in every event, so once an event starts with the bytes the previous one had
 * up to its model value, the model sits at the same place and the walk is not repeated.
 */
export function openAINativeFramer(model: string): (native: NativeAnswer | undefined) => string | null {
  const shown = JSON.stringify(model);
  /** The last walked event up to the end of its model value, and that part as the client gets it. */
  let head = '';
  let shownHead = '';
  return (native) => {
    const text = native?.format === 'openai' ? native.text : undefined;
    if (text === undefined) return null;
    // A slice compared whole: String.prototype.startsWith measured several times slower here.
    if (head === '' || text.slice(0, head.length) !== head) {
      const span = topLevelStringSpan(text, 'model');
      if (span === null) return null;
      head = text.slice(0, span[1]);
      shownHead = text.slice(0, span[0]) + shown;
    }
    const data = shownHead === head ? text : shownHead + text.slice(head.length);
    // Data the upstream spread over several `data:` lines was joined with \n (JSON whitespace there): it goes out
    // over as many lines again, else the second line would not be data at all. (Asked of the upstream's own flat
    // text: the model name shown, JSON-encoded, holds no line break.)
    return `data: ${text.includes('\n') ? data.replaceAll('\n', '\ndata: ') : data}\n\n`;
  };
}
