import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleWorkers, newestMtime, relocateImportMetaUrl, ROOT, SRC } from './bundle-sources.js';

/**
 * `npm run build`: the gateway compiled to dist/, so it runs on plain node without a TypeScript loader.
 *
 *   dist/cli.js      the `tollgate` command (package.json "bin")       dist/index.js  `import ... from 'tollgate'`
 *   dist/admin.js    `import { AdminClient } from 'tollgate/admin'`    dist/chunk-*   code the entries share
 *   dist/cache/...   the worker scripts, bundled beside               dist/types/    .d.ts files (tsc)
 *
 * esbuild bundles the sources (the pipeline in pipelines/ and every built-in stage included) with npm packages
 * left as imports; one bundle loads faster than hundreds of modules. `--if-stale` builds only when a source is
 * newer than the last build's stamp; `--no-declarations` skips tsc (npm start needs no .d.ts).
 */

const DIST = join(ROOT, 'dist');
const STAMP = join(DIST, '.build-stamp');
/** What a build reads: when one of these is newer than the stamp, dist/ is out of date. */
const INPUTS = ['src', 'pipelines', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.ts', 'scripts/bundle-sources.ts'].map((path) => join(ROOT, path));
/** Builds running at once (tests, npm start, npm pack) wait for each other here rather than write over each other. */
const LOCK = join(ROOT, '.dist-build.lock');
const LOCK_STALE_MS = 180_000;

interface Stamp {
  declarations: boolean;
}

export interface BuildOptions {
  declarations?: boolean;
  quiet?: boolean;
}

function readStamp(): Stamp | null {
  try {
    return JSON.parse(readFileSync(STAMP, 'utf8')) as Stamp;
  } catch {
    return null;
  }
}

/** Whether dist/ holds a build of the current sources (with declarations, when they are wanted). */
export function distIsCurrent(options: { declarations?: boolean } = {}): boolean {
  const stamp = readStamp();
  if (!stamp || (options.declarations && !stamp.declarations)) return false;
  return statSync(STAMP).mtimeMs >= newestMtime(INPUTS);
}

async function bundle(outdir: string): Promise<void> {
  await build({
    entryPoints: { cli: join(SRC, 'cli.ts'), index: join(SRC, 'index.ts'), admin: join(SRC, 'admin-client/index.ts') },
    outdir,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
    // Bundles sit at dist/'s top; a source file's own URL is where it would be in an unbundled dist/.
    plugins: [relocateImportMetaUrl((inCodeDir) => `new URL(${JSON.stringify(`./${inCodeDir}`)}, import.meta.url).href`)],
  });
  await bundleWorkers(outdir);
  chmodSync(join(outdir, 'cli.js'), 0o755);
}

function declarations(outdir: string): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(outdir, 'types')], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`tsc (declarations) failed:\n${result.stdout}${result.stderr}`);
}

async function withLock<T>(work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A build that died holding the lock must not block every later one.
      const age = Date.now() - (statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > LOCK_STALE_MS) rmSync(LOCK, { recursive: true, force: true });
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

/**
 * Builds into a fresh folder and moves it in place at the end, so a failed build leaves the last good dist/ and no
 * build mixes its files with an older one's.
 */
export function buildGateway(options: BuildOptions = {}): Promise<void> {
  return withLock(() => buildUnlocked(options));
}

async function buildUnlocked(options: BuildOptions): Promise<void> {
  const declarationsToo = options.declarations ?? true;
  const started = Date.now();
  const partial = `${DIST}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    await bundle(partial);
    if (declarationsToo) declarations(partial);
    writeFileSync(join(partial, '.build-stamp'), `${JSON.stringify({ declarations: declarationsToo } satisfies Stamp)}\n`);
    rmSync(DIST, { recursive: true, force: true });
    renameSync(partial, DIST);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  if (!options.quiet) process.stderr.write(`build: dist/ built in ${Date.now() - started} ms${declarationsToo ? ' (with type declarations)' : ''}\n`);
}

/** Builds when dist/ is missing or older than its sources; says whether it did. */
export async function buildGatewayIfStale(options: BuildOptions = {}): Promise<'current' | 'built'> {
  if (distIsCurrent(options)) return 'current';
  return withLock(async () => {
    // Another process may have built it while this one waited for the lock.
    if (distIsCurrent(options)) return 'current';
    await buildUnlocked(options);
    return 'built';
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const declarationsWanted = !process.argv.includes('--no-declarations');
  if (process.argv.includes('--if-stale')) await buildGatewayIfStale({ declarations: declarationsWanted });
  else await buildGateway({ declarations: declarationsWanted });
  if (!existsSync(join(DIST, 'cli.js'))) throw new Error('build: dist/cli.js is missing after the build');
}
