import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Builds the web dashboard (dashboard/ -> dashboard/dist) when it is missing or its sources changed since the
 * last build. `npm start` and the browser tests call it, so a fresh clone needs only `npm install && npm start`.
 * "Changed" is a hash of the sources (not file times, which a checkout resets), kept beside the build.
 */

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DASHBOARD = join(ROOT, 'dashboard');
const DIST = join(DASHBOARD, 'dist');
const STAMP = join(DIST, '.source-hash');
/** What the build reads besides dashboard/src: the page, the build config, and the locked dependency versions. */
const INPUTS = ['dashboard/index.html', 'dashboard/vite.config.ts', 'dashboard/tsconfig.json', 'package-lock.json'];

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

export function dashboardSourceHash(): string {
  const hash = createHash('sha256');
  for (const file of [...INPUTS.map((input) => join(ROOT, input)), ...filesUnder(join(DASHBOARD, 'src'))]) {
    hash.update(relative(ROOT, file)).update('\0');
    if (existsSync(file)) hash.update(readFileSync(file));
    hash.update('\0');
  }
  return hash.digest('hex');
}

export function dashboardIsCurrent(): boolean {
  return existsSync(join(DIST, 'index.html')) && existsSync(STAMP) && readFileSync(STAMP, 'utf8').trim() === dashboardSourceHash();
}

/** Whether vite is installed: an install without dev dependencies cannot build, and says so instead of failing. */
function viteBin(): string | null {
  try {
    const require = createRequire(import.meta.url);
    return join(require.resolve('vite/package.json', { paths: [ROOT] }), '..', 'bin', 'vite.js');
  } catch {
    return null;
  }
}

export type BuildOutcome = 'current' | 'built' | 'no-vite';

/** Builds when needed; throws when the build itself fails (a broken source must not go unnoticed). */
export function buildDashboardIfStale(options: { force?: boolean; quiet?: boolean } = {}): BuildOutcome {
  if (!options.force && dashboardIsCurrent()) return 'current';
  const vite = viteBin();
  if (!vite) return 'no-vite';
  const hash = dashboardSourceHash();
  const result = spawnSync(process.execPath, [vite, 'build', DASHBOARD, '--logLevel', options.quiet ? 'error' : 'warn'], { cwd: ROOT, stdio: options.quiet ? 'pipe' : 'inherit', encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`The dashboard build failed (vite exited ${result.status}).${options.quiet ? `\n${result.stdout}\n${result.stderr}` : ''}`);
  writeFileSync(STAMP, `${hash}\n`);
  return 'built';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const force = process.argv.includes('--force');
  const outcome = buildDashboardIfStale({ force });
  if (outcome === 'built') console.log('dashboard: built into dashboard/dist');
  else if (outcome === 'current') console.log('dashboard: dashboard/dist is up to date');
  else console.warn('dashboard: vite is not installed (install without --omit=dev), so the dashboard is not built; the API works and / says how to build it');
}
