import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
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

/**
 * Moves a finished build into dashboard/dist without ever leaving it empty. vite empties its output folder before
 * it writes, so building straight into dist/ made a running gateway answer `/` with its "not built" 503 for the
 * seconds a rebuild takes (the not-built page tells users to rebuild while it runs), and two builds at once (two
 * browser test files) wrote into each other. Each build has a folder of its own; its bundles (content-hashed
 * names) move in first, then index.html by a rename over the old one (a reader gets the old page or the new, never
 * none), then the files of earlier builds go.
 */
function install(built: string): void {
  const fresh = new Set<string>();
  for (const file of filesUnder(built)) {
    const path = relative(built, file);
    if (path === 'index.html') continue;
    fresh.add(path);
    mkdirSync(dirname(join(DIST, path)), { recursive: true });
    renameSync(file, join(DIST, path));
  }
  renameSync(join(built, 'index.html'), join(DIST, 'index.html'));
  for (const file of filesUnder(DIST)) {
    const path = relative(DIST, file);
    if (path !== 'index.html' && file !== STAMP && !fresh.has(path)) rmSync(file, { force: true });
  }
}

export type BuildOutcome = 'current' | 'built' | 'no-vite';

/** Builds when needed; throws when the build itself fails (a broken source must not go unnoticed). */
export function buildDashboardIfStale(options: { force?: boolean; quiet?: boolean } = {}): BuildOutcome {
  if (!options.force && dashboardIsCurrent()) return 'current';
  const vite = viteBin();
  if (!vite) return 'no-vite';
  const hash = dashboardSourceHash();
  // Inside dashboard/ so that the moves into dist/ are renames on one file system.
  const built = join(DASHBOARD, `.build-${process.pid}-${Date.now()}`);
  try {
    const result = spawnSync(process.execPath, [vite, 'build', DASHBOARD, '--outDir', built, '--emptyOutDir', '--logLevel', options.quiet ? 'error' : 'warn'], { cwd: ROOT, stdio: options.quiet ? 'pipe' : 'inherit', encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`The dashboard build failed (vite exited ${result.status}).${options.quiet ? `\n${result.stdout}\n${result.stderr}` : ''}`);
    mkdirSync(DIST, { recursive: true });
    install(built);
  } finally {
    rmSync(built, { recursive: true, force: true });
  }
  // Renamed into place too: a build running at the same time reads either stamp whole.
  writeFileSync(`${built}.stamp`, `${hash}\n`);
  renameSync(`${built}.stamp`, STAMP);
  return 'built';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const force = process.argv.includes('--force');
  const outcome = buildDashboardIfStale({ force });
  if (outcome === 'built') console.log('dashboard: built into dashboard/dist');
  else if (outcome === 'current') console.log('dashboard: dashboard/dist is up to date');
  else console.warn('dashboard: vite is not installed (install without --omit=dev), so the dashboard is not built; the API works and / says how to build it');
}
