import { existsSync, realpathSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { ConfigService } from './config-service.js';
import { parse as parseYaml } from 'yaml';
import { isRecord } from '../core/is-record.js';
import { parseConfigText, readConfigText } from './load-file.js';
import type { ConfigFile } from './schema.js';
import { ConfigError } from './secret-ref.js';
import type { Log } from '../log.js';

/** The route names a file defines, read leniently (it may not validate): for an honest 404 when it is rejected. */
function routeNamesOf(text: string): string[] {
  const raw: unknown = parseYaml(text);
  return isRecord(raw) && isRecord(raw.routes) ? Object.keys(raw.routes) : [];
}

/** Whether a file's text holds no document (empty, or only comments and blank lines); unreadable YAML is a document. */
function documentLess(text: string): boolean {
  try {
    return parseYaml(text) === null;
  } catch {
    return false;
  }
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
  if (Object.keys(config).length === 0 && documentLess(text)) {
    throw new ConfigError(`${path}: the file is empty (a save still being written?); write {} for a config of defaults only`);
  }
  return config;
}

/**
 * The directories to watch and, in each, the names whose changes may have changed the file. The file's own
 * directory, for its own name and Kubernetes' ConfigMap swap: a mounted ConfigMap's file is a symlink through
 * `..data`, which the kubelet replaces by renaming a new `..data_tmp` symlink over it, so the file's name never
 * appears in those events. And, when the file is a symlink to a file elsewhere (a dotfiles checkout, a config kept
 * under /srv and linked into /etc), the directory of the file it leads to, for that file's name: saving the real
 * file changes the config but raises no event beside the link.
 */
function watchedNames(path: string): Map<string, Set<string>> {
  const names = new Map<string, Set<string>>([[dirname(path), new Set([basename(path), '..data', '..data_tmp'])]]);
  let real: string;
  try {
    real = realpathSync(path);
  } catch {
    return names;
  }
  if (real !== path) {
    const set = names.get(dirname(real)) ?? new Set<string>();
    set.add(basename(real));
    names.set(dirname(real), set);
  }
  return names;
}

/**
 * The directories and names of the config file and of the files its `file:` references read: a key in a mounted
 * Secret is renewed by the kubelet (the same `..data` swap as a ConfigMap) without the config file changing.
 */
function allWatchedNames(path: string, references: readonly string[]): Map<string, Set<string>> {
  const all = watchedNames(path);
  for (const reference of references) {
    for (const [dir, names] of watchedNames(reference)) {
      const set = all.get(dir) ?? new Set<string>();
      for (const name of names) set.add(name);
      all.set(dir, set);
    }
  }
  return all;
}

/**
 * Reads the config file again and applies it now, as a save the watch saw would be (SIGHUP: the operator's "reload",
 * for a file whose changes the watch cannot see, such as a network mount or a host out of inotify watches, and for
 * `file:` references renewed in place). The same checks: a file that does not parse or validate, or holds no
 * document, is refused and the running config stays; a file that changes nothing in effect is no new version. A file
 * that is not there leaves the running config as it is.
 */
export async function applyConfigFileNow(path: string, service: ConfigService, log: Log): Promise<void> {
  if (!existsSync(path)) {
    log.warn({ file: path, version: service.current().version }, 'reload asked, but the config file is not there; serving the last applied config');
    return;
  }
  let text: string | null = null;
  const read = (): string => (text ??= readConfigText(path));
  const from = service.current().version;
  const applied = await service.reloadFile(() => parseSaved(read(), path), () => routeNamesOf(read()));
  if (applied) log.info({ file: path, version: service.current().version, previousVersion: from }, 'reload asked: config file read again');
}

/**
 * Watches the config file and applies each saved version. Directories are watched rather than the file,
 * because editors save by writing a new file and renaming it over the old one (and Kubernetes swaps a symlink
 * beside it). Where a symlink leads is looked up again after every change, so retargeting the link moves the
 * watch along. The files of `file:` references are watched the same way, and a change to one applies the config
 * again, so a renewed key is read. Bursts of events from one save are coalesced.
 */
export function watchConfigFile(path: string, service: ConfigService, log: Log, debounceMs = 100, emptyRetryMs = 250, missingPollMs = 2_000): () => void {
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  /**
   * The file is gone (deleted, or its directory removed or unmounted): the gateway keeps serving the last config it
   * applied, says so once, and looks for the file again, by its directory's events and, should the directory itself
   * be gone (its watch with it), every `missingPollMs`. When the file is back it is applied like any save (a copy of
   * the running config is no new version).
   */
  let missing = false;
  /** The last look found the file without a document, and it was given a second look before being refused. */
  let lookedAgain = false;
  const watchers = new Map<string, { watcher: FSWatcher; names: Set<string> }>();

  const reload = (): void => {
    timer = null;
    if (closed) return;
    if (!existsSync(path)) {
      if (!missing) {
        missing = true;
        log.warn({ file: path, version: service.current().version }, 'config file removed; serving the last applied config until the file is back');
      }
      arm();
      timer = setTimeout(reload, missingPollMs);
      return;
    }
    arm();
    if (missing) {
      missing = false;
      log.info({ file: path }, 'config file is back; applying it');
    }
    let text: string | null = null;
    // Read as at start, so a file that cannot be read (no permission, a directory now) is named in words, not by errno.
    const read = (): string => (text ??= readConfigText(path));
    // A file without a document is most likely a save between its truncation and its write, which a loaded machine
    // can hold apart for longer than the debounce: it is looked at once more before being refused (the write's own
    // event usually comes first and cancels that look).
    let empty = false;
    try {
      empty = documentLess(read());
    } catch {
      // Unreadable: refused below, in words.
    }
    if (empty && !lookedAgain) {
      lookedAgain = true;
      timer = setTimeout(reload, emptyRetryMs);
      return;
    }
    lookedAgain = false;
    // Armed again once applied: the save may name files (references) that were not watched yet.
    void service.reloadFile(() => parseSaved(read(), path), () => routeNamesOf(read())).then(() => {
      if (!closed) arm();
    });
  };

  const onEvent = (dir: string, changed: string | Buffer | null): void => {
    const names = watchers.get(dir)?.names;
    if (changed !== null && names !== undefined && !names.has(changed.toString())) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(reload, debounceMs);
  };

  /** Watches the directories `watchedNames` gives now, and stops watching those it no longer gives. */
  function arm(): boolean {
    const wanted = allWatchedNames(path, service.fileReferences());
    for (const [dir, entry] of watchers) {
      // A directory removed takes its watch with it: dropped, so that it is watched anew once it is back.
      if (wanted.has(dir) && existsSync(dir)) continue;
      entry.watcher.close();
      watchers.delete(dir);
    }
    let own = true;
    for (const [dir, names] of wanted) {
      const existing = watchers.get(dir);
      if (existing) {
        existing.names = names;
        continue;
      }
      // While the file is missing its directory may be too: the look every missingPollMs watches it once it is back.
      if (missing && !existsSync(dir)) continue;
      try {
        const watcher = watch(dir, { persistent: false }, (_event, changed) => onEvent(dir, changed));
        // A watcher's error (its directory gone on some platforms) must not end the process: it just goes quiet.
        watcher.on('error', (err: Error) => log.warn({ file: path, dir, error: err.message }, 'config file watch failed; changes need the API, SIGHUP or a restart'));
        watchers.set(dir, { watcher, names });
      } catch (err) {
        if (dir === dirname(path)) {
          own = false;
          log.warn({ file: path, dir, error: (err as Error).message }, 'cannot watch the config file; changes need the API, SIGHUP or a restart');
        } else {
          log.warn({ file: path, dir, error: (err as Error).message }, 'cannot watch a file the config reads (a file: reference, a symlink target); a change to it applies at the next save of the config file or a restart');
        }
      }
    }
    return own;
  }

  const stop = (): void => {
    closed = true;
    if (timer) clearTimeout(timer);
    for (const { watcher } of watchers.values()) watcher.close();
    watchers.clear();
  };
  if (!arm()) stop();
  return stop;
}
