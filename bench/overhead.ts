// Overhead benchmark: autocannon against (a) the scripted upstream directly, (b) tollgate in front of it and
// (c) a bare undici pass-through proxy in front of it, non-streaming and streaming, at the same
// concurrency, in one run. Each server runs in its own Node process so none shares an event loop with
// another or with autocannon (which runs here). Usage:
//   npm run bench:overhead -- [--duration 10] [--warmup 2] [--connections 1,10] [--modes json,stream] [--profile]
import { mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { runLoad } from './load.js';
import { formatReport, type Measurement, type Mode, type TargetName } from './report.js';
import { spawnServer, type ServerChild } from './spawn-server.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    connections: { type: 'string', default: '1,10' },
    modes: { type: 'string', default: 'json,stream' },
    // Writes a V8 CPU profile of the gateway process to bench/profiles/ when it exits.
    profile: { type: 'boolean', default: false },
  },
});

function positiveInts(flag: string, text: string): number[] {
  const list = text.split(',').map((part) => Number(part.trim()));
  if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`bad --${flag}: ${text}`);
  return list;
}

const durationSec = positiveInts('duration', values.duration)[0] ?? 10;
const warmupSec = Number(values.warmup);
if (!Number.isInteger(warmupSec) || warmupSec < 0) throw new Error(`bad --warmup: ${values.warmup}`);
const connectionList = positiveInts('connections', values.connections);
const modes = values.modes.split(',').map((m) => m.trim()) as Mode[];
if (modes.some((m) => m !== 'json' && m !== 'stream')) throw new Error(`bad --modes: ${values.modes}`);

/** The request body. The upstream sees the same model name whichever way the request came. */
function body(target: TargetName, mode: Mode): string {
  const payload: Record<string, unknown> = {
    model: target === 'tollgate' ? 'openai/gpt-4o-mini' : 'gpt-4o-mini',
    messages: [{ role: 'user', content: 'hello there, how are you today?' }],
  };
  if (mode === 'stream') Object.assign(payload, { stream: true, stream_options: { include_usage: true } });
  return JSON.stringify(payload);
}

/** One request per target and mode before measuring: a target that answers with errors would look fast. */
async function checkTarget(url: string, target: TargetName, mode: Mode): Promise<void> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: body(target, mode),
  });
  const text = await response.text();
  const ok = response.status === 200 && text.includes('echo') && (mode === 'json' || text.includes('[DONE]'));
  if (!ok) throw new Error(`${target} (${mode}) answered ${response.status}: ${text.slice(0, 300)}`);
}

const children: ServerChild[] = [];
let stopping: Promise<void> | null = null;
function stopAll(): Promise<void> {
  stopping ??= Promise.all(children.map((child) => child.stop())).then(() => undefined);
  return stopping;
}
process.once('SIGINT', () => {
  console.error('\ninterrupted: stopping servers');
  void stopAll().finally(() => process.exit(130));
});

async function main(): Promise<void> {
  const upstream = await spawnServer('upstream', './serve-upstream.ts', ['--port', '0']);
  children.push(upstream);
  const profileDir = fileURLToPath(new URL('./profiles/', import.meta.url));
  if (values.profile) mkdirSync(profileDir, { recursive: true });
  const gatewayFlags = values.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [];
  const [gateway, proxy] = await Promise.all([
    spawnServer('tollgate', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url], gatewayFlags),
    spawnServer('bare-proxy', './serve-proxy.ts', ['--port', '0', '--upstream', upstream.url]),
  ]);
  children.push(gateway, proxy);
  const targets: Array<[TargetName, ServerChild]> = [
    ['upstream', upstream],
    ['tollgate', gateway],
    ['bare-proxy', proxy],
  ];

  for (const mode of modes) for (const [name, server] of targets) await checkTarget(server.url, name, mode);

  console.log(
    `overhead bench: ${durationSec} s runs after ${warmupSec} s warm-up, connections ${connectionList.join(',')}, ` +
      `modes ${modes.join(',')}; node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'})`,
  );
  const measurements: Measurement[] = [];
  for (const connections of connectionList) {
    for (const mode of modes) {
      for (const [name, server] of targets) {
        const load = { url: `${server.url}/v1/chat/completions`, body: body(name, mode), connections };
        if (warmupSec > 0) await runLoad({ ...load, durationSec: warmupSec });
        const cpuBefore = await server.cpuMicros();
        const result = await runLoad({ ...load, durationSec });
        const cpuAfter = await server.cpuMicros();
        const measurement: Measurement = {
          ...result,
          target: name,
          mode,
          connections,
          cpuPerRequestUs: (cpuAfter - cpuBefore) / result.completed,
        };
        measurements.push(measurement);
        console.log(
          `  ${name.padEnd(10)} ${mode.padEnd(6)} c=${String(connections).padEnd(3)} ` +
            `${result.rps.toFixed(0)} req/s  p50 ${result.p50.toFixed(3)} ms  p99 ${result.p99.toFixed(3)} ms` +
            `  non-2xx ${result.non2xx}  errors ${result.errors}`,
        );
      }
    }
  }

  console.log(`\n${formatReport(measurements)}`);
  const bad = measurements.filter((m) => m.non2xx > 0 || m.errors > 0);
  if (bad.length > 0) {
    console.error(`\nWARNING: ${bad.length} run(s) had non-2xx answers or errors; their figures are not comparable.`);
    process.exitCode = 1;
  }
}

try {
  await main();
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await stopAll();
}
