import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { processCpuMicros } from './proc-cpu.js';
import type { ServerChild } from './spawn-server.js';

const require = createRequire(import.meta.url);

/**
 * The Portkey AI gateway (npm `@portkey-ai/gateway`, its Node build) started headless on `port`, as a baseline.
 * It is told where the upstream is per request (`x-portkey-provider: openai` and `x-portkey-custom-host`), so it
 * calls the same scripted upstream as everything else. Its CPU is read from /proc, as it has no control channel.
 */
export async function startPortkey(port: number): Promise<ServerChild> {
  const entry = join(dirname(require.resolve('@portkey-ai/gateway/package.json')), 'build/start-server.js');
  const child = spawn(process.execPath, [entry, `--port=${port}`, '--headless'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`portkey exited before it was ready: ${output.slice(-500)}`);
    try {
      await fetch(url);
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`portkey: not listening on ${port} within 30 s: ${output.slice(-500)}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    name: 'portkey',
    url,
    pid: child.pid ?? -1,
    cpuMicros: async () => (child.pid ? processCpuMicros(child.pid) : Number.NaN),
    async stop(graceMs = 3000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The headers that point a Portkey request at the scripted upstream. */
export function portkeyHeaders(upstreamUrl: string): Record<string, string> {
  return { 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstreamUrl}/v1` };
}
