/**
 * Bounds what an error message echoes. A client (or an upstream) may send a value of any size; an error that
 * repeats it whole turns a 12 MB model name into a 12 MB error answer and log line. Values up to `max`
 * characters come back unchanged, so messages about ordinary inputs read as before.
 */

/** How many characters of a client-supplied value an error message repeats. */
export const QUOTED_INPUT_CHARS = 200;
/** How many characters of an upstream's error message tollgate passes on. */
export const UPSTREAM_MESSAGE_CHARS = 1_000;

/**
 * `value` itself when it has at most `max` characters; otherwise its first `max` characters (never splitting a
 * surrogate pair) followed by `… (N characters)`, N being the full length.
 */
export function quoteInput(value: string, max = QUOTED_INPUT_CHARS): string {
  if (value.length <= max) return value;
  let end = max;
  const last = value.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return `${value.slice(0, end)}… (${value.length} characters)`;
}

/**
 * Any JSON value as text, for a message or a comparison: a string as it is, anything else as its JSON (`5`, `null`,
 * `{"a":1}`). Not `String(value)`: a parsed object whose own `toString` and `valueOf` are not functions (valid JSON,
 * `{"type":{"toString":"x"}}`) makes String and template literals throw, which turned a request's 400 into a 500.
 * JSON.stringify calls no method of a parsed value (a `toJSON` that is not a function is an ordinary key).
 */
export function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  return JSON.stringify(value) ?? String(value);
}

/** {@link valueText}, bounded as {@link quoteInput} bounds it. */
export function quoteValue(value: unknown, max = QUOTED_INPUT_CHARS): string {
  return quoteInput(valueText(value), max);
}
