import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnv, repoRoot } from './main-process.js';

/** How long a first build may take on the 2-core machine (esbuild is quick; tsc's declarations are not). */
export const BUILD_TIMEOUT_MS = 180_000;

/**
 * Makes sure dist/ holds a build of the current sources, building it when stale (`npm run build`'s script with
 * --if-stale: it locks, so test files that ask at once build once). In a child process, so esbuild's service
 * process ends with it, and with declarations, like `npm pack`'s build, so neither rebuilds after the other.
 */
export async function ensureCompiled(): Promise<void> {
  const tsx = join(repoRoot, 'node_modules/tsx/dist/cli.mjs');
  await promisify(execFile)(process.execPath, [tsx, join(repoRoot, 'scripts/build.ts'), '--if-stale'], { cwd: repoRoot, env: childEnv({}, repoRoot), timeout: BUILD_TIMEOUT_MS });
}
