import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PluginEntryConfig } from '../core/config.js';
import { ConfigError } from '../config/secret-ref.js';
import type { PluginDefinition } from '../core/plugin.js';
import { resolvePackageEntry } from './resolve-package.js';
import { failureText } from './masked-error.js';

/** A plugin module found and imported: `key` identifies it (one `init`, one `close`) across config versions. */
export interface LoadedPluginModule {
  key: string;
  definition: PluginDefinition;
}

const INDEX_FILES = ['index.ts', 'index.mts', 'index.js', 'index.mjs'];

const TYPESCRIPT_FILE = /\.[cm]?tsx?$/;

/**
 * Whether TypeScript imports already work here: the gateway itself running from its .ts sources (under tsx or
 * vitest) has a loader for them; the compiled build (dist/, the single binary) has none until one is registered.
 */
const RUNNING_FROM_SOURCE = /\.ts$/.test(new URL(import.meta.url).pathname);

let typeScriptLoader: Promise<void> | null = null;

/**
 * Registers tsx's loader the first time a TypeScript plugin is configured in a compiled gateway, and only then:
 * a config without one pays nothing for it. (tsx is one of tollgate's dependencies for this reason.)
 */
function loadTypeScript(): Promise<void> {
  // Both of tsx's hooks, as `node --import tsx` has: a .ts file outside a `"type": "module"` package is CommonJS
  // to Node, and its imports of other .ts files go through require.
  typeScriptLoader ??= Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]).then(([esm, cjs]) => {
    esm.register();
    cjs.register();
  });
  return typeScriptLoader;
}

/** A file, or a folder's index file, relative to `baseDir`. */
function resolvePath(path: string, baseDir: string, field: string): string {
  const absolute = resolve(baseDir, path);
  if (!existsSync(absolute)) throw new ConfigError(`${field}: no such file or folder: ${absolute}`);
  if (!statSync(absolute).isDirectory()) return absolute;
  const index = INDEX_FILES.map((name) => join(absolute, name)).find((file) => existsSync(file));
  if (!index) throw new ConfigError(`${field}: the folder ${absolute} has no ${INDEX_FILES.join(', ')}`);
  return index;
}

/** An npm package resolved the way `import` would, from the config file's folder, then the working directory. */
function resolvePackage(name: string, dirs: { baseDir: string; cwd: string }, field: string): string {
  try {
    return resolvePackageEntry(name, [...new Set([dirs.baseDir, dirs.cwd])]);
  } catch (err) {
    throw new ConfigError(`${field}: cannot find package "${name}" from ${dirs.baseDir} (${(err as Error).message.split('\n', 1)[0]})`);
  }
}

/**
 * Why an import failed, in one line. Its message's first line, unless that only announces what follows: a TypeScript
 * plugin's syntax error is esbuild's 'Transform failed with 1 error:', and the next line says where and what
 * (`/srv/plugins/x.ts:3:14: ERROR: Expected ")" but found "}"`). A JavaScript syntax error is named as one, since
 * Node's message alone ('Unexpected token') does not say what kind of fault it is.
 */
function importFailure(err: unknown): string {
  const lines = failureText(err).split('\n').map((line) => line.trim()).filter((line) => line !== '');
  const said = lines[0]?.endsWith(':') ? lines.slice(0, 4).join(' ') : (lines[0] ?? '');
  const text = err instanceof Error && err.name === 'SyntaxError' ? `SyntaxError: ${said}` : said;
  return text.length > 500 ? `${text.slice(0, 500)}…` : text;
}

function isPluginDefinition(value: unknown): value is PluginDefinition {
  const candidate = value as Partial<PluginDefinition> | null;
  return typeof candidate === 'object' && candidate !== null && typeof candidate.name === 'string' && typeof candidate.create === 'function';
}

/** Whether an export is meant as a plugin definition (it has a `name` or a `create`), well-formed or not. */
function meantAsPlugin(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && ('create' in value || 'name' in value);
}

/** The definition a module exports: its default export, a default that CommonJS interop nested, or `plugin`. */
function definitionOf(module: Record<string, unknown>): unknown {
  const fallback = module.default as Record<string, unknown> | undefined;
  const candidates = [fallback, fallback?.default, fallback?.plugin, module.plugin];
  // One meant as a plugin but malformed is returned too, so that its fault is named (definitionFault).
  return candidates.find(isPluginDefinition) ?? candidates.find(meantAsPlugin);
}

const isFunctionOrAbsent = (value: unknown): boolean => value === undefined || typeof value === 'function';
const isOptionPath = (path: unknown): boolean => typeof path === 'string' && path !== '' && !path.split('.').includes('');
const shown = (value: unknown): string => (typeof value === 'function' ? 'a function' : (JSON.stringify(value) ?? String(value)).slice(0, 60));

/**
 * What is wrong with the fields of a definition the host reads (or null): a plugin is JavaScript too, or TypeScript
 * cast past the types, so `requires: 5` reaches the host as it was written. Unchecked, such a field failed later as a
 * TypeError (a 500 to PATCH /api/config, a start that named no entry) or only when the field was used (a `close` that
 * is no function, at the plugin's removal). The options schema is the host's to check (plugins.N.options).
 */
function definitionFault(definition: Record<string, unknown>): string | null {
  const { name, create, init, close, requires, secretOptions, placement } = definition;
  if (typeof name !== 'string') return `"name" must be a string, not ${shown(name)}`;
  if (typeof create !== 'function') return `"create" must be a function (options, config, services) => stage or null, not ${shown(create)}`;
  if (!isFunctionOrAbsent(init)) return `"init" must be a function, not ${shown(init)}`;
  if (!isFunctionOrAbsent(close)) return `"close" must be a function, not ${shown(close)}`;
  if (requires !== undefined && !Array.isArray(requires)) return `"requires" must be a list of service keys (serviceKey('id')), not ${shown(requires)}`;
  if (secretOptions !== undefined && !(Array.isArray(secretOptions) && secretOptions.every(isOptionPath))) {
    return `"secretOptions" must be a list of option paths such as 'api_key' or 'auth.token', not ${shown(secretOptions)}`;
  }
  if (placement !== undefined && placement !== null) {
    const { after, before } = placement as { after?: unknown; before?: unknown };
    if (typeof placement !== 'object' || Array.isArray(placement) || ![after, before].every((side) => side === undefined || typeof side === 'string')) {
      return `"placement" must be an object such as { after: 'auth' } or { before: 'call' }, not ${shown(placement)}`;
    }
  }
  return null;
}

/**
 * Imports the plugin a config entry names (`plugins.<index>`): `path` relative to `baseDir` (the config file's
 * folder), `package` from there or `cwd`. TypeScript works from source (tsx) and compiled (tsx's loader registered
 * on demand). Every failure is a
 * ConfigError naming the field, so a bad entry refuses the config change (400) or the start, never a request.
 */
export async function loadPluginModule(entry: PluginEntryConfig, index: number, dirs: { baseDir: string; cwd: string }): Promise<LoadedPluginModule> {
  const field = `plugins.${index}.${entry.path !== undefined ? 'path' : 'package'}`;
  const file = entry.path !== undefined ? resolvePath(entry.path, dirs.baseDir, field) : resolvePackage(entry.package ?? '', dirs, field);
  // A plugin file is imported again when it changed since it was loaded (its modification time is part of the URL
  // and of the key), so an edited plugin applies at the next config change without a restart. Packages are not:
  // an upgrade is an install, and a restart. (Node's CommonJS cache ignores the query: a TypeScript file outside an
  // ESM package, `"type": "module"`, keeps its first version until a restart.)
  const version = entry.path !== undefined ? Math.round(statSync(file).mtimeMs * 1000) : null;
  const url = pathToFileURL(file).href + (version !== null ? `?plugin-mtime=${version}` : '');
  let module: Record<string, unknown>;
  try {
    if (!RUNNING_FROM_SOURCE && TYPESCRIPT_FILE.test(file)) await loadTypeScript();
    module = (await import(/* @vite-ignore */ url)) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError(`${field}: cannot load plugin "${entry.name}" from ${file}: ${importFailure(err)}`);
  }
  const definition = definitionOf(module);
  if (!meantAsPlugin(definition)) {
    throw new ConfigError(`${field}: ${file} must export a plugin (definePlugin({ name, create, ... })) as its default export or as "plugin"`);
  }
  const fault = definitionFault(definition);
  if (fault !== null) throw new ConfigError(`${field}: plugin "${entry.name}" (${file}): ${fault}`);
  return { key: version !== null ? `${file}#${version}` : file, definition: definition as unknown as PluginDefinition };
}
