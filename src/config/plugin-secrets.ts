import type { PluginEntryConfig } from '../core/config.js';
import { isRecord } from '../core/is-record.js';
import { maskSecret } from './secret-box.js';
import { setOwn } from '../core/own-entry.js';

/**
 * The options a plugin declares secret (`definePlugin({ secretOptions: ['api_key', 'auth.token'] })`), by the name of
 * its config entry: the gateway's plugin host knows them once it has loaded the plugin. Empty for one it has not.
 */
export type PluginSecrets = (name: string) => readonly string[];

export const NO_PLUGIN_SECRETS: PluginSecrets = () => [];

/**
 * Whether the option at `path` (its keys and array indexes) is secret: a declared path names an option and everything
 * under it (`headers` covers every header), and `*` stands for any one key or index (`endpoints.*.token`).
 */
export function isSecretOption(declared: readonly string[], path: readonly string[]): boolean {
  return declared.some((pattern) => {
    const parts = pattern.split('.');
    return parts.length <= path.length && parts.every((part, i) => part === '*' || part === path[i]);
  });
}

/** A value a secret option may hold: a string, or a number (a PIN, an account number). */
type Leaf = string | number;

/**
 * `options` with each string and number leaf `change(value, path, shape)` says to change changed; the rest as it is.
 * `shape` is the path with its array indexes as `*`: the place of a leaf whatever its list's order.
 */
function mapOptionLeaves(
  options: unknown,
  change: (value: Leaf, path: readonly string[], shape: readonly string[]) => unknown,
  path: readonly string[] = [],
  shape: readonly string[] = [],
): unknown {
  if (typeof options === 'string' || typeof options === 'number') return change(options, path, shape);
  if (Array.isArray(options)) return options.map((item, i) => mapOptionLeaves(item, change, [...path, String(i)], [...shape, '*']));
  if (isRecord(options)) {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(options)) setOwn(out, key, mapOptionLeaves(value, change, [...path, key], [...shape, key]));
    return out;
  }
  return options;
}

/** `options` with each string leaf `change(value, path)` says to change changed; the rest as it is. */
export function mapOptionStrings(options: unknown, change: (value: string, path: readonly string[]) => string): unknown {
  return mapOptionLeaves(options, (value, path) => (typeof value === 'string' ? change(value, path) : value));
}

/** The value at `path` of options as stored, or undefined. */
export function optionAt(options: unknown, path: readonly string[]): unknown {
  let value = options;
  for (const key of path) {
    if (Array.isArray(value)) value = value[Number(key)];
    else if (isRecord(value)) value = value[key];
    else return undefined;
  }
  return value;
}

/**
 * What a secret number is sealed as, marked so that it opens as the number it was (a plugin's schema may take only a
 * number there). No string written in a config holds a NUL.
 */
const SEALED_NUMBER = '\u0000number:';

/**
 * Plugin entries with their secret options sealed or unsealed by `transform` (`secret` says which leaves are: the
 * declared ones to seal, every sealed one to unseal). A number is sealed with its type, and unsealed a number again.
 */
export function mapPluginSecrets(
  entries: readonly PluginEntryConfig[],
  secret: (name: string, path: readonly string[], value: string) => boolean,
  transform: (value: string) => string,
): PluginEntryConfig[] {
  const change = (name: string, value: Leaf, path: readonly string[]): unknown => {
    if (!secret(name, path, String(value))) return value;
    if (typeof value === 'number') return transform(`${SEALED_NUMBER}${value}`);
    const out = transform(value);
    return out.startsWith(SEALED_NUMBER) ? Number(out.slice(SEALED_NUMBER.length)) : out;
  };
  return entries.map((entry) => (entry.options === undefined ? entry : { ...entry, options: mapOptionLeaves(entry.options, (value, path) => change(entry.name, value, path)) }));
}

/**
 * Plugin entries as the API, the audit log and the dashboard show them: declared secrets masked (`****abcd`; a number
 * as its digits are), references whole.
 */
export function maskPluginEntries(entries: readonly PluginEntryConfig[], secrets: PluginSecrets): PluginEntryConfig[] {
  return entries.map((entry) => {
    if (entry.options === undefined) return entry;
    const declared = secrets(entry.name);
    return { ...entry, options: mapOptionLeaves(entry.options, (value, path) => (isSecretOption(declared, path) ? maskSecret(String(value)) : value)) };
  });
}

/**
 * Plugin entries a client read (secrets masked) and writes back: a secret option that shows the masked form of the
 * stored entry's (of the same name, at the same place) is the stored value again; one moved within a list (an item
 * before it removed, the list reordered: `endpoints.*.token`) is the one stored value of that list whose masked form
 * it shows. `refuse(where, stored)` says what to do with a masked value that stands for nothing stored (a reference
 * of the file's stored there, or nothing).
 */
export function restoreMaskedPluginEntries(
  next: readonly PluginEntryConfig[],
  stored: readonly PluginEntryConfig[],
  secrets: PluginSecrets,
  isMasked: (value: string) => boolean,
  refuse: (where: string, stored: unknown) => Error,
): PluginEntryConfig[] {
  return next.map((entry, index) => {
    if (entry.options === undefined) return entry;
    const declared = secrets(entry.name);
    const before = stored.find((candidate) => candidate.name === entry.name)?.options;
    // The stored values by their place in lists whatever their index: written back with an item before them
    // removed, a masked secret read at endpoints.1.token is sent at endpoints.0.token.
    const byShape = new Map<string, Leaf[]>();
    mapOptionLeaves(before, (value, _path, shape) => {
      const key = shape.join('\u0000');
      byShape.set(key, [...(byShape.get(key) ?? []), value]);
      return value;
    });
    // A stored value (a number too) the masked one written back shows.
    const standsFor = (stored: unknown, value: string): stored is Leaf =>
      (typeof stored === 'string' || typeof stored === 'number') && String(stored) !== value && maskSecret(String(stored)) === value;
    const options = mapOptionLeaves(entry.options, (value, path, shape) => {
      // A number written back is a number the client chose: only strings show a masked value.
      if (typeof value !== 'string' || !isSecretOption(declared, path)) return value;
      const storedValue = optionAt(before, path);
      if (standsFor(storedValue, value)) return storedValue;
      if (!isMasked(value)) return value;
      const moved = new Set((byShape.get(shape.join('\u0000')) ?? []).filter((candidate) => standsFor(candidate, value)));
      // Two stored values with the same masked form (the same last four characters): which one it stands for is unknown.
      if (moved.size === 1) return [...moved][0];
      throw refuse(['plugins', index, 'options', ...path].join('.'), storedValue);
    });
    return { ...entry, options };
  });
}

/** How a masked secret reads (`****`, then up to four characters): what GET /api/config shows, never a value. */
const MASKED = /^\*{4}/;

/**
 * The path of a declared secret option that holds a masked value (`****abcd`), or null. Masked values written back
 * stand for the stored ones and are restored before a config is checked; one still there stands for nothing (an
 * entry renamed in the dashboard's editor, copied from another gateway's GET /api/config or pasted into the file).
 */
export function maskedSecretAt(options: unknown, declared: readonly string[]): readonly string[] | null {
  let found: readonly string[] | null = null;
  if (declared.length > 0) {
    mapOptionStrings(options, (value, path) => {
      if (found === null && MASKED.test(value) && isSecretOption(declared, path)) found = path;
      return value;
    });
  }
  return found;
}

/** Secret values shorter than this are left in text: masking them would hide ordinary words and numbers. */
const SHORTEST_MASKED_VALUE = 4;

/**
 * The secret values in one plugin's options: those at the paths it declares secret, and those read from an
 * `env:`/`file:` reference (the operator kept them out of the config, whatever the plugin declares). `written` is
 * the options as the config holds them, `resolved` with their references read.
 */
export function secretOptionValues(written: unknown, resolved: unknown, declared: readonly string[]): string[] {
  const values = new Set<string>();
  const walk = (value: unknown, path: readonly string[]): void => {
    if (typeof value === 'string' || typeof value === 'number') {
      const asWritten = optionAt(written, path);
      const fromReference = typeof asWritten === 'string' && asWritten !== value && (asWritten.startsWith('env:') || asWritten.startsWith('file:'));
      const text = String(value);
      if ((fromReference || isSecretOption(declared, path)) && text.length >= SHORTEST_MASKED_VALUE) values.add(text);
    } else if (Array.isArray(value)) value.forEach((item, i) => walk(item, [...path, String(i)]));
    else if (isRecord(value)) for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
  };
  walk(resolved, []);
  return [...values];
}

/**
 * `text` (a plugin's error message) with each of `values` shown as the config shows a secret (`****abcd`): a plugin
 * that quotes its credential when it refuses it must not put it in the log, /health or an API answer.
 */
export function maskValuesIn(text: string, values: readonly string[]): string {
  let out = text;
  for (const value of [...values].sort((a, b) => b.length - a.length)) if (out.includes(value)) out = out.split(value).join(maskSecret(value));
  return out;
}
