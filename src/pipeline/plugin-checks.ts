import type { PluginEntryConfig } from '../core/config.js';
import type { PluginDefinition, ServiceKey } from '../core/plugin.js';
import { ConfigError } from '../config/secret-ref.js';
import { maskedSecretAt } from '../config/plugin-secrets.js';

/**
 * The checks of a config's plugins that need no plugin code run: the gateway makes them before a config version
 * goes live (PluginHost) and `tollgate check-config` makes the same ones, so a file it passes also starts.
 */

/** How long a plugin's import and `init` may take together unless its entry says (init_timeout_ms). */
export const DEFAULT_INIT_TIMEOUT_MS = 30_000;

/** A plugin whose import (and init) did not settle within its entry's init_timeout_ms (`limit`). */
export function tooSlowToLoad(name: string, index: number, limit: number): ConfigError {
  return new ConfigError(`plugins.${index}: plugin "${name}" was not loaded and initialised within ${limit} ms (init_timeout_ms)`);
}

/** Every key a plugin `requires` is a service key the gateway has (`has`), else a ConfigError naming the entry. */
export function checkRequires(definition: PluginDefinition, name: string, index: number, has: (key: ServiceKey<unknown>) => boolean): void {
  for (const key of (definition.requires ?? []) as readonly Partial<ServiceKey<unknown>>[]) {
    if (typeof key?.id !== 'string') throw new ConfigError(`plugins.${index}: plugin "${name}" lists something that is not a service key in requires`);
    if (!has(key as ServiceKey<unknown>)) {
      throw new ConfigError(`plugins.${index}: plugin "${name}" requires service "${key.id}", which this gateway does not provide`);
    }
  }
}

/**
 * A `listed` plugin runs where a route, key or team turns it on: it must come after the `route` stage in the placed
 * `order`, by which time the route is planned and the caller known (`auth` runs before `route`).
 */
export function checkListedPlacement(entries: readonly PluginEntryConfig[], order: readonly string[]): void {
  const route = order.indexOf('route');
  if (route === -1) return;
  entries.forEach((entry, index) => {
    if (entry.apply !== 'listed' || order.indexOf(entry.name) > route) return;
    throw new ConfigError(`plugins.${index}.placement: plugin "${entry.name}" applies where a route, key or team lists it, so it must be placed after "route" (it is before it)`);
  });
}

/**
 * No declared secret option (`secretOptions`, which only the loaded plugin tells) holds a masked value (`****abcd`):
 * one left after the stored values were restored stands for nothing (an entry renamed in the dashboard's editor,
 * copied from another gateway's GET /api/config or pasted into the file), and the plugin was created with it as
 * its credential.
 */
export function checkMaskedSecrets(entry: PluginEntryConfig, index: number, declared: readonly string[]): void {
  const masked = maskedSecretAt(entry.options, declared);
  if (!masked) return;
  throw new ConfigError(
    `${['plugins', index, 'options', ...masked].join('.')}: plugin "${entry.name}": a masked secret (as GET /api/config shows one) stands for no stored value under this plugin name; write or send the value itself`,
  );
}
