import type { RuntimeConfig } from '../core/config.js';

/** Objects already made read-only with all they hold: a part a later version shares is not walked again. */
const readOnlyParts = new WeakSet<object>();

function refuseChange(): never {
  throw new TypeError('the running configuration is read-only: change it through the config file or /api/config, which make a new version');
}

/** Whether `value` is data the config built (a plain object or an array), not an object with state of its own. */
function isPlainData(value: object): boolean {
  if (Array.isArray(value)) return true;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Freezes `value` and everything it holds. Object.freeze cannot stop a Map's set or a Set's add (their entries are no
 * properties), so each gets own set/add, delete and clear methods that refuse; get, has and iteration stay the native
 * ones, so reading costs what it did. Objects with state of their own (a compiled RegExp, whose lastIndex a global
 * match moves; a dispatcher; a class instance) are left as they are, and so is `skip`.
 */
function freezeDeep(value: unknown, skip: unknown): void {
  if (value === null || typeof value !== 'object' || value === skip || readOnlyParts.has(value)) return;
  if (value instanceof Map || value instanceof Set) {
    readOnlyParts.add(value);
    const adds = value instanceof Map ? 'set' : 'add';
    Object.defineProperties(value, { [adds]: { value: refuseChange }, delete: { value: refuseChange }, clear: { value: refuseChange } });
    for (const [key, entry] of value.entries()) {
      freezeDeep(key, skip);
      freezeDeep(entry, skip);
    }
    Object.freeze(value);
    return;
  }
  if (!isPlainData(value)) return;
  readOnlyParts.add(value);
  for (const key of Reflect.ownKeys(value)) freezeDeep((value as Record<PropertyKey, unknown>)[key], skip);
  Object.freeze(value);
}

/**
 * Makes a config version read-only in place, once, as it is published: every request of that version (and every
 * plugin, through `ctx.config` or `create`'s config) shares this one object, so a stage that wrote to it would change
 * the config of every other request, unversioned and unaudited. A write now throws a TypeError. Nothing per request:
 * the walk runs once per version and skips what an earlier version already froze. The config file's live status
 * (`fileStatus`) is the config service's own, updated in place as the file is saved, and stays writable.
 */
export function freezeRuntimeConfig<T extends RuntimeConfig>(config: T): T {
  freezeDeep(config, config.fileStatus);
  return config;
}
