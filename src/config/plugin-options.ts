import type { PluginEntryConfig } from '../core/config.js';
import { isRecord } from '../core/is-record.js';
import { resolveSecret, type Env } from './secret-ref.js';
import { setOwn } from '../core/own-entry.js';

/**
 * A plugin's options with their `env:NAME` and `file:/path` references read (strings at any depth), as a provider's
 * key is: a plugin needing a credential (a moderation service's key, a webhook token) gets the value while the config
 * holds the reference. References are honoured only from the config file; `where` names the option
 * (`plugins.0.options.auth.token`) in the error for one that cannot be read. Runs once per config version.
 */
export function resolvedOptions(options: unknown, where: string, read: (value: string, where: string) => string): unknown {
  if (typeof options === 'string') return read(options, where);
  if (Array.isArray(options)) return options.map((item, i) => resolvedOptions(item, `${where}.${i}`, read));
  if (isRecord(options)) {
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(options)) setOwn(out, key, resolvedOptions(value, `${where}.${key}`, read));
    return out;
  }
  return options;
}

/**
 * Every plugin entry's options with their references read, by entry name (names are unique in a config). Only the
 * file's are read: the API refuses references in plugin options, and a string like one that an older version stored
 * through the API (when options were never read) is passed on as the literal it was then, not read now.
 */
export function resolvePluginOptions(entries: readonly PluginEntryConfig[], source: 'api' | 'file', env: Env, dataDir: string): ReadonlyMap<string, unknown> {
  const origin = { referencesAllowed: true, dataDir, placeholdersAllowed: true };
  const out = new Map<string, unknown>();
  entries.forEach((entry, index) => {
    out.set(entry.name, source === 'api' ? entry.options : resolvedOptions(entry.options, `plugins.${index}.options`, (value, where) => resolveSecret(value, env, where, origin)));
  });
  return out;
}
