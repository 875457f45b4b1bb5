import { randomBytes } from 'node:crypto';

/**
 * Numbers a client sends reach the upstream digit for digit. JSON.parse turns every number into a double, so
 * `"seed": 9223372036854775807` would go out as `9223372036854776000`. A body in which the parsed value holds a
 * number JSON.parse may have rounded (found by the walk the body parser makes anyway, see json-body.ts) is parsed
 * again, with each number a double would change kept as a marker string carrying its exact text.
 * Whatever a dialect and adapter do with the value, the marker is serialised as a string, and the call stage swaps
 * it back for the bare digits in the upstream body (`restoreExactNumbers`).
 *
 * The fields tollgate itself reads as numbers (limits, sampling knobs: {@link PLAIN_TOP}, {@link PLAIN_INSIDE}) stay
 * plain doubles, as before: their checks and translations read numbers, and a marker there would only turn into a
 * confusing error or a silently dropped field. A value in them that needs more than a double is absurd anyway
 * (a budget check refuses a max_tokens past 2^31). One that does not fit in a double at all (`1e999`) is refused
 * ({@link NumberOutOfRange}): as a double it would be Infinity, which JSON.stringify sends upstream as `null`.
 * Gemini's `seed` is the exception inside its generation config: an integer, kept exact like any other.
 */

/** Per process and unguessable, so a client cannot write a string that turns into a number upstream. */
const MARKER = `tollgate-exact-number:${randomBytes(8).toString('hex')}:`;
/** A JSON number, nothing else: even a forged marker could only ever become a number the client could have sent. */
const NUMBER = '-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?';
/** A JSON number where the scan stands (sticky). */
const NUMBER_HERE = new RegExp(NUMBER, 'y');

/** Top-level request fields tollgate reads as numbers (OpenAI, Anthropic and Gemini embeddings names). */
const PLAIN_TOP = new Set(['max_tokens', 'max_completion_tokens', 'n', 'temperature', 'top_p', 'top_k', 'presence_penalty', 'frequency_penalty', 'dimensions', 'outputDimensionality', 'output_dimensionality']);
/** Objects whose numbers tollgate reads: Gemini's generation config (and its thinking config), Anthropic's thinking. */
const PLAIN_INSIDE = new Set(['generationConfig', 'generation_config', 'thinkingConfig', 'thinking_config', 'thinking']);

/** Fields inside {@link PLAIN_INSIDE} objects tollgate only copies, never reads: kept exact (Gemini's int32 seed). */
const EXACT_INSIDE = new Set(['seed']);

/**
 * A number in a field tollgate reads that a double cannot hold (`1e999`): thrown by {@link parseExactly}, so the
 * body parser answers a 400 naming the field in the route's own error shape instead of sending `null` upstream.
 */
export class NumberOutOfRange extends Error {
  constructor(
    readonly field: string,
    readonly text: string,
  ) {
    super(`The number ${text} in '${field}' is out of range: it does not fit in a double-precision number.`);
  }
}

/** Bodies parsed with at least one marker, so only their requests pay for the restoring replace. */
const withMarkers = new WeakSet<object>();

/** `1.50e3` → `15|4`: the significant digits and where the decimal point sits, so equal values compare equal. */
function decimal(text: string): string {
  const e = text.search(/[eE]/);
  const mantissa = e < 0 ? text : text.slice(0, e);
  const exponent = e < 0 ? 0 : Number(text.slice(e + 1));
  const negative = mantissa.startsWith('-');
  const unsigned = negative ? mantissa.slice(1) : mantissa;
  const dot = unsigned.indexOf('.');
  const digits = dot < 0 ? unsigned : unsigned.slice(0, dot) + unsigned.slice(dot + 1);
  const lead = digits.search(/[1-9]/);
  if (lead < 0) return '0';
  const significant = digits.slice(lead).replace(/0+$/, '');
  const point = (dot < 0 ? unsigned.length : dot) - lead + exponent;
  return `${negative ? '-' : ''}${significant}|${point}`;
}

const INTEGER = /^-?[0-9]+$/;

/**
 * Whether a double holds the number as written: its shortest form is the same text, or for a fraction or exponent
 * the same decimal (`1.50` is 1.5, `1E5` is 100000). An integer must come back as the same digits: a long but exact
 * `9007199254740992` stays a number, while `100000000000000000000000` would go out as `1e+23`, a float to a Python
 * or Go upstream. Never when it overflows (`1e400` would go out as `null`), underflows (`1e-400` as `0`) or loses
 * digits.
 */
function exactAsDouble(token: string): boolean {
  const n = Number(token);
  if (!Number.isFinite(n)) return false;
  const shortest = String(n);
  if (shortest === token) return true;
  return !INTEGER.test(token) && decimal(shortest) === decimal(token);
}

function isMarker(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(MARKER);
}

/** A marker's number as a plain double; one a double cannot hold is refused (see {@link NumberOutOfRange}). */
function plainNumber(marker: string, field: string): number {
  const text = marker.slice(MARKER.length);
  const n = Number(text);
  if (!Number.isFinite(n)) throw new NumberOutOfRange(field, text);
  return n;
}

/** The fields tollgate reads back to plain doubles; returns how many markers that removed. `path` names the object. */
function plainFields(object: Record<string, unknown>, all: boolean, path: string): number {
  let removed = 0;
  for (const key of Object.keys(object)) {
    const value = object[key];
    if (isMarker(value) && (all ? !EXACT_INSIDE.has(key) : PLAIN_TOP.has(key))) {
      object[key] = plainNumber(value, path + key);
      removed++;
    } else if (PLAIN_INSIDE.has(key) && typeof value === 'object' && value !== null && !Array.isArray(value)) {
      removed += plainFields(value as Record<string, unknown>, true, `${path}${key}.`);
    }
  }
  return removed;
}

/**
 * Every string and every number of a JSON text, in order. On text JSON.parse accepted, a token starting with a digit
 * or `-` outside a string is a whole number (the next character is a comma, a bracket or white space). The string
 * alternative is written as an unrolled loop, which V8 runs without a backtracking entry per character, so a
 * 20 MB string is no problem.
 */
const TOKENS = /"[^"\\]*(?:\\.[^"\\]*)*"|-?[0-9][0-9.eE+-]*/g;

/**
 * `text` parsed with every number a double would change kept as a marker. Call it only on text JSON.parse accepted.
 * Each such number is quoted as a marker string in the text, then JSON.parse reads it: the same parser, so the same
 * duplicate-key, `__proto__` and nesting behaviour as every other body, and 5 to 30 times faster than a parser
 * written in JavaScript (lossless-json: 0.8 ms against 0.14 ms for a 100 KB body, 570 ms against 16 ms for 5 MB).
 * Throws {@link NumberOutOfRange} for a field tollgate reads holding a number no double can hold.
 */
export function parseExactly(text: string): unknown {
  let markers = 0;
  const marked = text.replace(TOKENS, (token) => {
    if (token.charCodeAt(0) === 0x22 /* " */ || exactAsDouble(token)) return token;
    markers++;
    return `"${MARKER}${token}"`;
  });
  const value: unknown = JSON.parse(marked);
  if (markers > 0 && typeof value === 'object' && value !== null) {
    if (!Array.isArray(value)) markers -= plainFields(value as Record<string, unknown>, false, '');
    if (markers > 0) withMarkers.add(value);
  }
  return value;
}

/** Whether a parsed request body carries numbers kept exact (markers the upstream body must have restored). */
export function hasExactNumbers(body: unknown): boolean {
  return typeof body === 'object' && body !== null && withMarkers.has(body);
}

/**
 * Whether a request value is a number: a plain one, or one kept exact as a marker. Adapters that copy a number into
 * another wire format's field (Gemini's `generationConfig.seed`) use it, so the client's digits reach the upstream
 * and the upstream judges them, instead of the field being dropped for not being a JavaScript number.
 */
export function isNumberValue(value: unknown): boolean {
  return typeof value === 'number' || isMarker(value);
}

/** Whether a request value is a number kept exact as a marker (one a double would change), not a plain one. */
export function isExactNumber(value: unknown): value is string {
  return isMarker(value);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The upstream body with each marker string replaced by the number it stands for, as the client wrote it. A marker
 * string is as JSON.stringify writes it: `"<marker><digits>"`, or escaped inside another string (a tool call's
 * `arguments` built from a parsed `input`: `\"<marker><digits>\"`, the same number of backslashes on both sides);
 * else a marker some code pasted into a text, whose prefix alone goes. Found with indexOf and read around by hand,
 * in one pass: a regular expression for it (`(\\*)"<marker>...\1"`) backtracked over every run of backslashes
 * in the body, and 120 KB of them held the event loop for seconds.
 */
export function restoreExactNumbers(serialized: string): string {
  let at = serialized.indexOf(MARKER);
  if (at === -1) return serialized;
  let out = '';
  let from = 0;
  while (at !== -1) {
    let replaced = false;
    if (at > from && serialized.charCodeAt(at - 1) === QUOTE) {
      // The backslashes before the opening quote (not reaching back into what was already written).
      let left = at - 1;
      while (left > from && serialized.charCodeAt(left - 1) === BACKSLASH) left--;
      const before = at - 1 - left;
      NUMBER_HERE.lastIndex = at + MARKER.length;
      const number = NUMBER_HERE.exec(serialized);
      if (number !== null) {
        const end = NUMBER_HERE.lastIndex;
        let after = 0;
        while (after <= before && serialized.charCodeAt(end + after) === BACKSLASH) after++;
        if (after <= before && serialized.charCodeAt(end + after) === QUOTE) {
          // `\\"<marker>n\\"`: the quotes and the backslashes that escape them go, any further ones before stay.
          out += serialized.slice(from, at - 1 - after) + number[0];
          from = end + after + 1;
          replaced = true;
        }
      }
    }
    if (!replaced) {
      out += serialized.slice(from, at);
      from = at + MARKER.length;
    }
    at = serialized.indexOf(MARKER, from);
  }
  return out + serialized.slice(from);
}
