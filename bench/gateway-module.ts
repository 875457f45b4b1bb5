import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { buildGatewayIfStale } from '../scripts/build.js';
import type { createGateway as CreateGateway } from '../src/gateway.js';
import type { Log } from '../src/log.js';
import type { ServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

/**
 * The gateway the bench servers run: the compiled build in dist/ (what `npm start` and the binary run; the bench
 * builds it first when stale), or the TypeScript sources through tsx with `TOLLGATE_BENCH_SOURCE=src`. They
 * differ: tsx compiles with esbuild's keepNames, which wraps every function a closure creates in a `__name` call
 * (Object.defineProperty), about 3% of a request's CPU and more garbage.
 */
export async function loadGateway(): Promise<{ createGateway: typeof CreateGateway; silentLog: Log }> {
  const fromSource = process.env.TOLLGATE_BENCH_SOURCE === 'src';
  // Another build's dist/ (an earlier commit's, built in a worktree), to compare two builds in one run.
  const otherBuild = process.env.TOLLGATE_BENCH_DIST;
  // Servers start side by side: the build takes a lock, so only one builds and the others wait for it.
  if (!fromSource && !otherBuild) await buildGatewayIfStale({ declarations: false });
  const entry = otherBuild ? pathToFileURL(join(resolve(otherBuild), 'index.js')).href : fromSource ? '../src/index.js' : '../dist/index.js';
  const module = (await import(entry)) as { createGateway: typeof CreateGateway };
  // tsx (how the bench servers start) turns source maps on for the whole process, and `node dist/cli.js` runs with
  // them off. On, the first error stack a server formats (undici makes one for every upstream call a client
  // abandons, as the load generator does at the end of each slice) parses the source maps of every file on it:
  // 100-150 ms of CPU charged to whichever server and slice it falls in, and every later stack costs more. Off, as
  // in production.
  process.setSourceMapsEnabled(false);
  return { createGateway: module.createGateway, silentLog: pino({ level: 'silent' }) };
}

/**
 * A bench server's whole life: tollgate with one `openai` provider pointed at the upstream, on a fresh data
 * directory (so earlier runs' data cannot change the cost of this one), metrics as given, every span exported to
 * `--otlp` when set, plus `sections` (cache, guardrails, ...); listening on the control channel, and the data
 * directory removed when it stops.
 */
export async function serveBenchGateway(args: ServeArgs, options: { metrics: boolean; dataDirPrefix: string; sections?: Record<string, unknown> }): Promise<void> {
  const { createGateway, silentLog } = await loadGateway();
  const dataDir = mkdtempSync(join(tmpdir(), options.dataDirPrefix));
  const gateway = await createGateway({
    config: {
      providers: { openai: { base_url: `${args.upstream}/v1`, api_key: 'sk-bench' } },
      settings: {
        data_dir: dataDir,
        metrics: { enabled: options.metrics },
        ...(args.otlp ? { tracing: { endpoint: args.otlp, sample_ratio: args.sample } } : {}),
      },
      ...options.sections,
    },
    env: {},
    log: silentLog,
  });
  const url = await gateway.listen({ port: args.port, host: '127.0.0.1' });
  serveControl(url, async () => {
    try {
      await gateway.close(1000);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
}
