import { randomBytes } from 'node:crypto';
import { parse } from 'lossless-json';

/**
 * Numbers a client sends reach the upstream digit for digit. JSON.parse turns every number into a double, so
 * `"seed": 9223372036854775807` would go out as `9223372036854776000`. A body in which the parsed value holds a
 * number JSON.parse may have rounded (found by the walk the body parser makes anyway, see json-body.ts) is parsed
 * again losslessly, and each number a double would change is kept as a marker string carrying its exact text.
 * Whatever a dialect and adapter do with the value, the marker is serialised as a string, and the call stage swaps
 * it back for the bare digits in the upstream body (`restoreExactNumbers`).
 */

/** Per process and unguessable, so a client cannot write a string that turns into a number upstream. */
const MARKER = `tollgate-exact-number:${randomBytes(8).toString('hex')}:`;
const MARKER_STRING = new RegExp(`"${MARKER}(-?[0-9][0-9.eE+-]*)"`, 'g');

/** Bodies parsed with at least one marker, so only their requests pay for the restoring replace. */
const withMarkers = new WeakSet<object>();

/** Whether a double holds the number as written: fewer than 16 significant digits, or the same text back. */
function exactAsDouble(token: string): boolean {
  const mantissa = token.replace(/^-/, '').split(/[eE]/)[0] ?? '';
  const significant = mantissa.replace('.', '').replace(/^0+/, '').length;
  return significant < 16 || String(Number(token)) === token;
}

/**
 * `text` parsed with every number a double would change kept as a marker. Call it only on text JSON.parse
 * accepted and whose nesting was checked: lossless-json's parser recurses.
 */
export function parseExactly(text: string): unknown {
  let marked = false;
  const value = parse(text, null, (token: string) => {
    if (exactAsDouble(token)) return Number(token);
    marked = true;
    return `${MARKER}${token}`;
  });
  if (marked && typeof value === 'object' && value !== null) withMarkers.add(value);
  return value;
}

/** Whether a parsed request body carries numbers kept exact (markers the upstream body must have restored). */
export function hasExactNumbers(body: unknown): boolean {
  return typeof body === 'object' && body !== null && withMarkers.has(body);
}

/** The upstream body with each marker string replaced by the number it stands for, as the client wrote it. */
export function restoreExactNumbers(serialized: string): string {
  return serialized.replace(MARKER_STRING, '$1');
}
