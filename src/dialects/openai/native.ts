import type { NativeAnswer } from '../../core/canonical.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Whether the character at `at` is JSON whitespace (space, tab, line feed, carriage return). */
function isSpace(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** Where the string opening at `start` (its quote) ends: the index of its closing quote, or -1. */
function stringEnd(text: string, start: number): number {
  let at = start + 1;
  for (;;) {
    const quote = text.indexOf('"', at);
    if (quote === -1) return -1;
    // A quote preceded by an odd number of backslashes is escaped, part of the string.
    let slashes = 0;
    while (text.charCodeAt(quote - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote;
    at = quote + 1;
  }
}

/**
 * Where the top-level object's `key` holds a string in a JSON text: the start (its opening quote) and the end
 * (just past its closing quote) of the value as written; null when that key is absent at the top level or holds
 * something else. The text is one that JSON.parse accepted. Only the structure is walked: strings are skipped
 * whole (a `"model":` inside a content string is part of that string), and keys of nested objects are at a
 * deeper level, so neither is mistaken for the field.
 */
export function topLevelStringSpan(text: string, key: string): [number, number] | null {
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
    else if (c === QUOTE) {
      const end = stringEnd(text, at);
      if (end === -1) return null;
      if (depth === 1 && end - at - 1 === key.length && text.slice(at + 1, end) === key) {
        let next = end + 1;
        while (isSpace(text, next)) next++;
        if (text.charCodeAt(next) === COLON) {
          next++;
          while (isSpace(text, next)) next++;
          if (text.charCodeAt(next) !== QUOTE) return null;
          const valueEnd = stringEnd(text, next);
          return valueEnd === -1 ? null : [next, valueEnd + 1];
        }
      }
      at = end;
    }
  }
  return null;
}

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
