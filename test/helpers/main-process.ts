import { spawn, type ChildProcess, type SpawnOptionsWithStdioTuple } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { freePort } from './net.js';

export const repoRoot = resolve(import.meta.dirname, '../..');
const mainScript = join(repoRoot, 'src/main.ts');
/** The compiled gateway (`npm run build`; test/helpers/compiled.ts builds it when stale). */
export const compiledCli = join(repoRoot, 'dist/cli.js');
/** What `npm start` loads with `--import tsx`, by absolute URL so it resolves from any working directory. */
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;

/**
 * Every process a test starts carries this variable, set by test/global-setup.ts for the run, so the suite's
 * teardown can find any that outlived its test (even one orphaned by a crashed worker) and fail the run.
 */
export const SPAWN_MARKER = 'TOLLGATE_TEST_RUN';

/** The environment a spawned process gets: only what is given, plus PATH, HOME and the run's marker. */
export function childEnv(env: Record<string, string>, cwd: string): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? cwd, [SPAWN_MARKER]: process.env[SPAWN_MARKER] ?? 'unmarked', ...env };
}

export interface MainProcess {
  /** The process spawned: the server itself (`node`), or npm when started `via: 'npm'`. */
  child: ChildProcess;
  /** The pid of the process that serves (node running src/main.ts or dist/cli.js): the child itself, or npm's descendant. */
  serverPid: number;
  url: string;
  port: number;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
}

export interface SpawnOptions {
  cwd: string;
  env?: Record<string, string>;
  port?: number;
  /**
   * `node` runs the TypeScript sources through tsx; `compiled` runs dist/cli.js (what `npm start` runs, without npm;
   * build it first with ensureCompiled()); `npm` runs `npm start` in `cwd`'s stead.
   */
  via?: 'node' | 'compiled' | 'npm';
  /** Command-line arguments for the gateway (`--config`, `--port`, ...). */
  args?: string[];
  /** Extra `--import` modules for node (a fault to inject into the real server process). */
  imports?: string[];
  /** Own process group, so a test can signal the group as a terminal or a container runtime does. */
  detached?: boolean;
}

/** Starts the gateway as a real process and waits until /health answers and it logged its pid. */
export async function spawnMain(options: SpawnOptions): Promise<MainProcess> {
  const port = options.port ?? (await freePort());
  const env = childEnv({ PORT: String(port), HOST: '127.0.0.1', TOLLGATE_DATA_DIR: join(options.cwd, 'data'), ...options.env }, options.cwd);
  const imports = (options.imports ?? []).flatMap((module) => ['--import', module]);
  const args = options.args ?? [];
  const spawnOptions: SpawnOptionsWithStdioTuple<'ignore', 'pipe', 'pipe'> = { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: options.detached };
  const child =
    options.via === 'npm'
      ? spawn('npm', ['start', '--silent', '--prefix', repoRoot, ...(args.length > 0 ? ['--', ...args] : [])], spawnOptions)
      : options.via === 'compiled'
        ? spawn(process.execPath, [...imports, compiledCli, ...args], spawnOptions)
        : spawn(process.execPath, ['--import', tsxLoader, ...imports, mainScript, ...args], spawnOptions);
  let output = '';
  child.stdout?.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr?.on('data', (data: Buffer) => (output += data.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 25_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`gateway exited early:\n${output}`);
    const healthy = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    const serverPid = healthy && child.pid !== undefined ? serverUnder(child.pid) : null;
    if (serverPid !== null) return { child, serverPid, url, port, exit, output: () => output };
    await new Promise((done) => setTimeout(done, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`gateway did not become healthy:\n${output}`);
}

/** The process running the gateway (src/main.ts or dist/cli.js) at or under `pid` (npm's child may be a shell's), from /proc. */
function serverUnder(pid: number): number | null {
  let command = '';
  try {
    command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return null;
  }
  if (command.includes('src/main.ts') || command.includes('dist/cli.js')) return pid;
  let children: string[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return null;
  }
  for (const child of children) {
    const found = serverUnder(Number(child));
    if (found !== null) return found;
  }
  return null;
}

/** Opens a fresh TCP connection (no pooled keep-alive socket) to see whether the port still accepts. */
export function tryConnect(port: number): Promise<'connected' | 'refused'> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done('connected');
    });
    socket.once('error', () => done('refused'));
  });
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until the port refuses connections and the pid is gone, or the time is up; says which it saw. */
export async function waitUntilGone(pid: number, port: number, withinMs: number): Promise<{ port: 'connected' | 'refused'; alive: boolean }> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const state = { port: await tryConnect(port), alive: processAlive(pid) };
    if ((state.port === 'refused' && !state.alive) || Date.now() > deadline) return state;
    await new Promise((done) => setTimeout(done, 50));
  }
}
