import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { isRecord } from '../core/is-record.js';

/** The conditions `import()` resolves a package's "exports" with in Node. */
const IMPORT_CONDITIONS = new Set(['node', 'import', 'default']);

/** The file an "exports" value maps the package's root (".") to under `import()`'s conditions, or null. */
function exportTarget(exports: unknown, atRoot = true): string | null {
  if (typeof exports === 'string') return exports;
  if (Array.isArray(exports)) {
    for (const item of exports) {
      const target = exportTarget(item, false);
      if (target !== null) return target;
    }
    return null;
  }
  if (!isRecord(exports)) return null;
  const keys = Object.keys(exports);
  // A map of subpaths ({ ".": ..., "./extra": ... }) at the top; a map of conditions anywhere.
  if (atRoot && keys.some((key) => key.startsWith('.'))) return Object.hasOwn(exports, '.') ? exportTarget(exports['.'], false) : null;
  for (const key of keys) {
    if (!IMPORT_CONDITIONS.has(key)) continue;
    const target = exportTarget(exports[key], false);
    if (target !== null) return target;
  }
  return null;
}

/** The folder of package `name` in the node_modules of `dir` or of a folder above it, as Node looks it up. */
function packageFolder(name: string, dir: string): string | null {
  for (let at = resolve(dir); ; at = dirname(at)) {
    const folder = join(at, 'node_modules', name);
    if (existsSync(join(folder, 'package.json'))) return folder;
    if (dirname(at) === at) return null;
  }
}

/**
 * The file `import(name)` would load, looked up from each of `dirs` in turn. The package is imported, so its
 * "exports" are read with `import()`'s conditions: resolved as `require` resolves it, a package that exports only
 * for "import" (an ESM-only package) was not found at all, and a dual package's CommonJS build was loaded. A
 * package without "exports" resolves as Node resolves one ("main", else index.js). Throws with Node's reason.
 */
export function resolvePackageEntry(name: string, dirs: readonly string[]): string {
  for (const dir of dirs) {
    const folder = packageFolder(name, dir);
    if (folder === null) continue;
    const manifest: unknown = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
    if (!isRecord(manifest) || manifest.exports === undefined) return createRequire(join(dir, 'tollgate-plugins.js')).resolve(folder);
    const target = exportTarget(manifest.exports);
    if (target === null || !target.startsWith('./')) throw new Error(`its package.json "exports" give no entry for import ("node", "import" or "default")`);
    const file = resolve(folder, target);
    if (!existsSync(file)) throw new Error(`its package.json "exports" name ${target}, which does not exist`);
    return file;
  }
  throw new Error(`no node_modules/${name} in ${dirs.join(' or ')} or a folder above`);
}
