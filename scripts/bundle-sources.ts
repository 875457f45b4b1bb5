import { readFile } from 'node:fs/promises';
import { readdirSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/**
 * What the compiled build (scripts/build.ts) and the single binary (scripts/build-binary.ts) share: where the
 * sources are, and how a module's own URL survives bundling.
 */

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SRC = join(ROOT, 'src');

/** The worker scripts the gateway starts by file (new Worker(url)): each is bundled to its own file, beside. */
export const WORKER_SCRIPTS = ['cache/index-builder-worker.mjs', 'cache/embedding/use-lite-worker.mjs', 'cache/embedding/onnx-worker.mjs'];

/**
 * A few source files find files next to themselves from `import.meta.url`: the package.json (version), the built
 * dashboard and the worker scripts. Bundled, every module shares its bundle's URL, so each file's
 * `import.meta.url` is replaced by the URL it would have in the unbundled layout (src/x/y.ts -> <code dir>/x/y.js).
 * The compiled build's code dir is dist/ (`new URL('./x/y.js', import.meta.url)` from a bundle at dist/'s top);
 * the binary's is lib/ beside the executable, computed at run time. The worker scripts and non-code files are
 * placed to match: dist/cache/index-builder-worker.mjs, and ../package.json, ../dashboard/dist from the code dir.
 */
export function relocateImportMetaUrl(urlOf: (pathInCodeDir: string) => string): Plugin {
  return {
    name: 'relocate-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /[\\/]src[\\/].*\.(ts|mjs|js)$/ }, async (args) => {
        const source = await readFile(args.path, 'utf8');
        if (!source.includes('import.meta.url')) return undefined;
        const inCodeDir = relative(SRC, args.path).split(sep).join('/').replace(/\.ts$/, '.js');
        return { contents: source.replaceAll('import.meta.url', urlOf(inCodeDir)), loader: extname(args.path) === '.ts' ? 'ts' : 'js' };
      });
    },
  };
}

/** The newest modification time (ms) of the files under these paths: what a build stamp is compared with. */
export function newestMtime(paths: readonly string[]): number {
  let newest = 0;
  for (const path of paths) {
    const stat = statSync(path, { throwIfNoEntry: false });
    if (!stat) continue;
    if (!stat.isDirectory()) {
      newest = Math.max(newest, stat.mtimeMs);
      continue;
    }
    for (const entry of readdirSync(path, { withFileTypes: true, recursive: true })) {
      if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/**
 * Bundles the worker scripts to `<codeDir>/cache/...` as ES modules with npm packages left as imports (resolved from
 * the node_modules above them at run time); index-builder-worker.mjs takes its VectorIndex along.
 */
export async function bundleWorkers(codeDir: string): Promise<void> {
  await build({
    entryPoints: WORKER_SCRIPTS.map((script) => join(SRC, script)),
    outbase: SRC,
    outdir: codeDir,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outExtension: { '.js': '.mjs' },
    logLevel: 'warning',
  });
}
