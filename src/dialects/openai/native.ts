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
      if (depth === 1 && end - at - 1 === key.length && text.startsWith(key, at + 1)) {
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

/**
 * An OpenAI-format upstream's own stream events, in SSE framing, exactly as they came but for `model`, which shows
 * the name the client sent (as every answer does), whichever upstream model served it. Null when an event has no
 * top-level `model` string to show it in: the caller then writes the chunk rendered from the canonical one.
 */
export function openAINativeFrames(native: NativeAnswer | undefined, model: string): string | null {
  const events = native?.format === 'openai' ? native.events : undefined;
  if (!events) return null;
  const shown = JSON.stringify(model);
  let out = '';
  for (const item of events) {
    const span = topLevelStringSpan(item.data, 'model');
    if (span === null) return null;
    const [start, end] = span;
    const data = end - start === shown.length && item.data.startsWith(shown, start) ? item.data : item.data.slice(0, start) + shown + item.data.slice(end);
    // Data the upstream spread over several `data:` lines was joined with \n (JSON whitespace there): it goes out
    // over as many lines again, else the second line would not be data at all.
    const lines = data.includes('\n') ? data.replaceAll('\n', '\ndata: ') : data;
    out += item.event && item.event !== 'message' ? `event: ${item.event}\ndata: ${lines}\n\n` : `data: ${lines}\n\n`;
  }
  return out;
}
