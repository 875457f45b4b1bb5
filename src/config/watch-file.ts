import { existsSync, readFileSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { ConfigService } from './config-service.js';
import { parse as parseYaml } from 'yaml';
import { isRecord } from '../core/is-record.js';
import { parseConfigText } from './load-file.js';
import type { ConfigFile } from './schema.js';
import { ConfigError } from './secret-ref.js';
import type { Log } from '../log.js';

/** The route names a file defines, read leniently (it may not validate): for an honest 404 when it is rejected. */
function routeNamesOf(text: string): string[] {
  const raw: unknown = parseYaml(text);
  return isRecord(raw) && isRecord(raw.routes) ? Object.keys(raw.routes) : [];
}

/**
 * A saved file's config. A file with no document in it (empty, or only comments and blank lines) is what an editor
 * that truncates in place and then writes (or `cat > file`, a slow copy) leaves between the two: applying it as a
 * zero config would drop every provider and route until the write lands. It is refused like a broken save; an
 * operator who means "defaults only" writes `{}`. (At start an empty file is a valid zero config: nothing runs yet.)
 */
function parseSaved(text: string, path: string): ConfigFile {
  const config = parseConfigText(text, path);
  // Only a config with nothing in it can come from a document-less file (`{}` is a document: it stays valid).
  if (Object.keys(config).length === 0 && parseYaml(text) === null) {
    throw new ConfigError(`${path}: the file is empty (a save still being written?); write {} for a config of defaults only`);
  }
  return config;
}

/**
 * A change in the config file's directory that may have changed the file: the file's own name, or Kubernetes'
 * ConfigMap swap. A mounted ConfigMap's file is a symlink through `..data`, which the kubelet replaces by renaming a
 * new `..data_tmp` symlink over it: the file's name never appears in those events.
 */
function mayChange(changed: string, name: string): boolean {
  return changed === name || changed === '..data' || changed === '..data_tmp';
}

/**
 * Watches the config file and applies each saved version. The directory is watched rather than the file,
 * because editors save by writing a new file and renaming it over the old one (and Kubernetes swaps a symlink
 * beside it). Bursts of events from one save are coalesced.
 */
export function watchConfigFile(path: string, service: ConfigService, log: Log, debounceMs = 100): () => void {
  const name = basename(path);
  let timer: NodeJS.Timeout | null = null;
  let watcher: FSWatcher;
  try {
    watcher = watch(dirname(path), { persistent: false }, (_event, changed) => {
      if (changed !== null && !mayChange(changed.toString(), name)) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timer = null;
        if (!existsSync(path)) {
          log.warn({ file: path }, 'config file removed; running config unchanged');
          return;
        }
        let text: string | null = null;
        const read = (): string => (text ??= readFileSync(path, 'utf8'));
        void service.reloadFile(() => parseSaved(read(), path), () => routeNamesOf(read()));
      }, debounceMs);
    });
  } catch (err) {
    log.warn({ file: path, error: (err as Error).message }, 'cannot watch the config file; changes need the API or a restart');
    return () => undefined;
  }
  return () => {
    if (timer) clearTimeout(timer);
    watcher.close();
  };
}
