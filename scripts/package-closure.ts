import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './bundle-sources.js';

interface LockEntry {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

/**
 * The installed packages (`node_modules/...` paths from package-lock.json) that these top-level packages need at
 * run time: themselves and their dependencies, found the way Node resolves them (the nearest node_modules up the
 * tree). Optional dependencies count when installed (the native build for this platform is one).
 */
export function runtimeClosure(roots: readonly string[]): string[] {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const found = new Set<string>();
  const resolveFrom = (from: string, name: string): string | null => {
    let dir = from;
    for (;;) {
      const candidate = `${dir ? `${dir}/` : ''}node_modules/${name}`;
      if (lock.packages[candidate]) return candidate;
      if (!dir) return null;
      const parent = dir.lastIndexOf('/node_modules/');
      dir = parent === -1 ? '' : dir.slice(0, parent);
    }
  };
  const visit = (path: string): void => {
    if (found.has(path)) return;
    found.add(path);
    const entry = lock.packages[path] ?? {};
    for (const name of [...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {})]) {
      const resolved = resolveFrom(path, name);
      // The lock lists every platform's optional build; only this machine's is installed.
      if (resolved && existsSync(join(ROOT, resolved))) visit(resolved);
    }
  };
  for (const root of roots) {
    const path = resolveFrom('', root);
    if (!path) throw new Error(`${root} is not in package-lock.json`);
    visit(path);
  }
  // A package nested inside another one found is copied with it.
  return [...found].filter((path) => ![...found].some((other) => other !== path && path.startsWith(`${other}/`))).sort();
}
