import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';

export interface ServerChild {
  name: string;
  url: string;
  /** The child's process id (for /proc readings: its threads, user and system time apart). */
  pid: number;
  /** Total CPU time (user + system) the child has used so far, in microseconds. */
  cpuMicros(): Promise<number>;
  /** Asks the child to shut down; kills it if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

// tsx as a loader (`node --import tsx`) rather than through its CLI: the CLI runs the script in a second
// Node process, which would put a relay between the bench and the server, hide the server from
// `process.cpuUsage()` sampling of the right process and from `--cpu-prof`.
const TSX_LOADER = import.meta.resolve('tsx');

/**
 * Starts a bench/serve-*.ts script in its own Node process and waits for its `listening <url>` line.
 * `nodeFlags` go to that Node (e.g. `--cpu-prof`); `env` is added to this process's environment for it.
 */
export function spawnServer(name: string, script: string, args: string[], nodeFlags: string[] = [], env: Record<string, string> = {}): Promise<ServerChild> {
  const path = fileURLToPath(new URL(script, import.meta.url));
  const child: ChildProcessByStdio<Writable, Readable, null> = spawn(
    process.execPath,
    [...nodeFlags, '--import', TSX_LOADER, path, ...args],
    { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...env } },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const cpuWaiters: Array<(micros: number) => void> = [];

  return new Promise<ServerChild>((resolve, reject) => {
    const startTimer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name}: no "listening" line within 30 s`));
    }, 30_000);
    child.once('exit', (code, signal) => {
      clearTimeout(startTimer);
      // A child that died mid-run must not leave a CPU sample pending forever.
      for (const waiter of cpuWaiters.splice(0)) waiter(Number.NaN);
      reject(new Error(`${name} exited before it was ready (code ${code}, signal ${signal})`));
    });

    createInterface({ input: child.stdout }).on('line', (line) => {
      const [kind, a, b] = line.split(' ');
      if (kind === 'listening' && a) {
        clearTimeout(startTimer);
        resolve({
          name,
          url: a,
          pid: child.pid as number,
          cpuMicros() {
            return new Promise<number>((done) => {
              cpuWaiters.push(done);
              child.stdin.write('cpu\n');
            });
          },
          async stop(graceMs = 5000) {
            if (child.exitCode !== null || child.signalCode !== null) return;
            child.stdin.end();
            const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
            await exited;
            clearTimeout(timer);
          },
        });
      } else if (kind === 'cpu') {
        cpuWaiters.shift()?.(Number(a) + Number(b));
      } else if (process.env.BENCH_ECHO_CHILDREN) {
        // What a child prints besides the control lines (a V8 flag's trace, say), to this process's stderr.
        process.stderr.write(`[${name}] ${line}\n`);
      }
    });
  });
}

/**
 * Waits until a gateway's /health lists nothing still loading in the background (the model list's prices, worked
 * out in 4 ms slices after start: 0.3-0.5 s of CPU on a slow machine, which would otherwise be charged to the
 * requests of the first measured slices).
 */
export async function untilLoaded(server: ServerChild, withinMs = 60_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  for (;;) {
    const health = (await (await fetch(`${server.url}/health`)).json()) as { loading?: string[] };
    if (!health.loading || health.loading.length === 0) return;
    if (performance.now() > deadline) throw new Error(`${server.name}: still loading ${health.loading.join(', ')} after ${withinMs} ms`);
    await new Promise((done) => setTimeout(done, 20));
  }
}
