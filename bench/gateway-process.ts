// Spawns the gateway as `npm start` runs it (the compiled dist/cli.js, built first when stale) with a config file and
// a data directory, for the benches that time or weigh the whole process (start-up, memory); TOLLGATE_BENCH_SOURCE=src
// runs src/main.ts through tsx's loader instead. Nothing waits here: callers poll.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { buildGatewayIfStale } from '../scripts/build.js';
import { childEnv, repoRoot } from '../test/helpers/main-process.js';

export interface GatewayProcess {
  child: ChildProcess;
  url: string;
  /** performance.now() just before the spawn. */
  spawnedAt: number;
  output(): string;
  /** SIGTERM, SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

const TSX_LOADER = import.meta.resolve('tsx');
const FROM_SOURCE = process.env.TOLLGATE_BENCH_SOURCE === 'src';

/** Builds dist/ when it is older than the sources (the compiled start only); call once before spawning. */
export async function prepareGateway(): Promise<void> {
  if (!FROM_SOURCE) await buildGatewayIfStale({ declarations: false });
}

export function spawnGateway(options: { cwd: string; port: number; dataDir: string; configPath: string }): GatewayProcess {
  const env = childEnv({ PORT: String(options.port), HOST: '127.0.0.1', TOLLGATE_DATA_DIR: options.dataDir, TOLLGATE_CONFIG: options.configPath, LOG_LEVEL: 'warn' }, options.cwd);
  const spawnedAt = performance.now();
  const args = FROM_SOURCE ? ['--import', TSX_LOADER, join(repoRoot, 'src/main.ts')] : [join(repoRoot, 'dist/cli.js')];
  const child = spawn(process.execPath, args, { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr?.on('data', (data: Buffer) => (output += data.toString()));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    child,
    url: `http://127.0.0.1:${options.port}`,
    spawnedAt,
    output: () => output,
    async stop(graceMs = 10_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(killer);
      }
    },
  };
}

/** Polls `check` every `everyMs` until it is true; resolves with performance.now() then, or throws after `withinMs`. */
export async function pollUntil(check: () => Promise<boolean>, withinMs: number, everyMs = 5): Promise<number> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    if (await check().catch(() => false)) return performance.now();
    if (performance.now() > deadline) throw new Error(`not within ${withinMs} ms`);
    await new Promise((done) => setTimeout(done, everyMs));
  }
}
