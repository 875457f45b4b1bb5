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
