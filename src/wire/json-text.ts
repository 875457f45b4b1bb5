/**
 * Reading a JSON text's structure without parsing it: where a top-level field's string value is written, so a
 * dialect can pass an upstream's own bytes on with one value changed (the model name the client sent).
 */

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
  const start = topLevelValueAt(text, key);
  if (start === -1 || text.charCodeAt(start) !== QUOTE) return null;
  const end = stringEnd(text, start);
  return end === -1 ? null : [start, end + 1];
}

/**
 * Where the value of the top-level object's `key` starts in a JSON text (past the colon and any spaces); -1 when
 * the key is not at the top level. Strings are skipped whole and nested objects' keys are deeper, so neither is
 * mistaken for the key.
 */
function topLevelValueAt(text: string, key: string): number {
  let depth = 0;
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
    else if (c === QUOTE) {
      const end = stringEnd(text, at);
      if (end === -1) return -1;
      if (depth === 1 && end - at - 1 === key.length && text.slice(at + 1, end) === key) {
        let next = end + 1;
        while (isSpace(text, next)) next++;
        if (text.charCodeAt(next) === COLON) {
          next++;
          while (isSpace(text, next)) next++;
          return next;
        }
      }
      at = end;
    }
  }
  return -1;
}

/**
 * `text` (a JSON object) with its top-level string field `key` set to `value`, the rest as written; the text itself
 * when it has no such field; null when the field is there but is not a string (the caller then re-serialises).
 */
export function withTopLevelString(text: string, key: string, value: string, present: boolean): string | null {
  const span = topLevelStringSpan(text, key);
  if (span === null) return present ? null : text;
  const [start, end] = span;
  const shown = JSON.stringify(value);
  return text.slice(start, end) === shown ? text : text.slice(0, start) + shown + text.slice(end);
}

/**
 * An upstream's whole body as the client gets it: its top-level string field `key` showing `value`, the rest as the
 * upstream wrote it when its text is at hand (numbers keep their digits), else re-serialised from `body`.
 */
export function bodyShowing(body: Record<string, unknown>, key: string, value: string, text?: string): string {
  const written = text === undefined ? null : withTopLevelString(text, key, value, key in body);
  return written ?? JSON.stringify(key in body ? { ...body, [key]: value } : body);
}

/** Where the object or array opening at `start` ends (just past its closing bracket), or -1. */
function containerEnd(text: string, start: number): number {
  let depth = 0;
  for (let at = start; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === 0) return at + 1;
    } else if (c === QUOTE) {
      const end = stringEnd(text, at);
      if (end === -1) return -1;
      at = end;
    }
  }
  return -1;
}

/**
 * Where the top-level object's `key` holds an object in a JSON text: its start (the brace) and end (just past the
 * closing brace); null when that key is absent at the top level or holds something else. Walked as
 * topLevelStringSpan walks, so an event's nested object (a Responses stream event's `response`) can have one of its
 * own fields changed in place.
 */
export function topLevelObjectSpan(text: string, key: string): [number, number] | null {
  const start = topLevelValueAt(text, key);
  if (start === -1 || text.charCodeAt(start) !== OPEN_BRACE) return null;
  const close = containerEnd(text, start);
  return close === -1 ? null : [start, close];
}
