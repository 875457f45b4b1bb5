import type { RuntimeConfig } from '../core/config.js';

/** What describes a version rather than what it does: never compared. */
const VERSION_FIELDS = new Set(['version', 'fileStatus']);

function sameMap(a: ReadonlyMap<unknown, unknown>, b: ReadonlyMap<unknown, unknown>): boolean {
  if (a.size !== b.size) return false;
  // In order: providers and routes are listed, and patterns matched, in the order they are written.
  const left = [...a];
  const right = [...b];
  return left.every(([key, value], i) => Object.is(key, right[i]?.[0]) && sameValue(value, right[i]?.[1]));
}

function sameObject(a: Record<string, unknown>, b: Record<string, unknown>, skip?: ReadonlySet<string>): boolean {
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const keys = Object.keys(a).filter((key) => a[key] !== undefined && !skip?.has(key));
  const other = Object.keys(b).filter((key) => b[key] !== undefined && !skip?.has(key));
  if (keys.length !== other.length) return false;
  return keys.every((key) => Object.prototype.hasOwnProperty.call(b, key) && sameValue(a[key], b[key]));
}

/**
 * Structural equality of resolved config values: maps and sets in order, arrays item by item, plain and class
 * objects field by field, regular expressions by source and flags. Functions are equal only when they are the same
 * function, so a value that holds a closure made per version reads as changed: the safe way to be wrong.
 */
function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (a instanceof Map) return b instanceof Map && sameMap(a, b);
  if (a instanceof Set) return b instanceof Set && sameMap(new Map([...a].map((v, i) => [i, v])), new Map([...b].map((v, i) => [i, v])));
  if (a instanceof RegExp) return b instanceof RegExp && a.source === b.source && a.flags === b.flags;
  if (a instanceof Date) return b instanceof Date && a.getTime() === b.getTime();
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  if (Array.isArray(b) || ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) return false;
  return sameObject(a as Record<string, unknown>, b as Record<string, unknown>);
}

/**
 * Whether two config versions would serve every request the same way: equal in everything but their version
 * number and the file's status. A config file saved without a change in effect (the same text, or only comments
 * and whitespace changed) resolves to such a config, and is no new version.
 */
export function sameEffect(a: RuntimeConfig, b: RuntimeConfig): boolean {
  return sameObject(a as unknown as Record<string, unknown>, b as unknown as Record<string, unknown>, VERSION_FIELDS);
}
