/**
 * `{ ...source, ...fields }` for objects tollgate built itself, without V8's slow path. On Node 20 an object literal
 * that starts with a spread and then adds a field the source lacks (`{ ...chunk, usage: null }` for a chunk without
 * `usage`) is built by the runtime, and once its code is optimized every object it makes gets a hidden class of its
 * own: 1-2.5 µs each, and every place the objects reach sees a new shape (bench/RESULTS.md, issue 22). Copying onto
 * a fresh object keeps one shape. (A spread that only overrides fields the source has is fine, and so is a literal
 * that starts with a field.)
 *
 * Not for objects parsed from a client's or an upstream's JSON: Object.assign sets a `__proto__` key through the
 * prototype's setter, where a spread copies it as a plain field.
 */
export function withFields<T extends object, U extends object>(source: T, fields: U): T & U {
  return Object.assign({}, source, fields);
}
