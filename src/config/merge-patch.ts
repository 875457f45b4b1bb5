import { setOwn } from '../core/own-entry.js';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** RFC 7396 JSON Merge Patch: objects merge recursively, `null` deletes, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) {
      delete out[key];
      continue;
    }
    // Set as an own property (setOwn): `out['__proto__'] = ...` would set the object's prototype, and
    // `out['constructor']` reads Object when absent. A name like these then reaches the schema, which refuses it
    // with a 400 naming it, instead of the patch dropping it silently.
    const current = Object.hasOwn(out, key) ? out[key] : undefined;
    setOwn(out, key, applyMergePatch(current, value));
  }
  return out;
}
