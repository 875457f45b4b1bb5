// Overhead benchmark: autocannon against (a) the scripted upstream directly, (b) tollgate in front of it and
// (c) a bare undici pass-through proxy in front of it, non-streaming and streaming, at the same
// concurrency, in one run. Each server runs in its own Node process so none shares an event loop with
// another or with autocannon (which runs here). Usage:
//   npm run bench:overhead -- [--duration 10] [--warmup 2] [--rounds 5] [--connections 1,10]
//                             [--modes json,stream] [--profile]
import { mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mergeSorted, percentile, runLoad } from './load.js';
import { formatReport, type Measurement, type Mode, type TargetName } from './report.js';
import { spawnServer, type ServerChild } from './spawn-server.js';
import { systemBusyMicros } from './system-cpu.js';

const { values } = parseArgs({
  options: {
    // Measured seconds per target, mode and connection count, split over `rounds` interleaved slices.
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '2' },
    rounds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '1,10' },
    modes: { type: 'string', default: 'json,stream' },
    // Writes V8 CPU profiles of the gateway and the bare proxy to bench/profiles/<name>/ when they exit.
    profile: { type: 'boolean', default: false },
  },
});

function ints(flag: string, text: string, min: number): number[] {
  const list = text.split(',').map((part) => Number(part.trim()));
  if (list.some((n) => !Number.isInteger(n) || n < min)) throw new Error(`bad --${flag}: ${text}`);
  return list;
}

const durationSec = ints('duration', values.duration, 1)[0] ?? 10;
const warmupSec = ints('warmup', values.warmup, 0)[0] ?? 2;
const rounds = ints('rounds', values.rounds, 1)[0] ?? 5;
const connectionList = ints('connections', values.connections, 1);
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

/** CPU used so far by each server and by this process (autocannon), plus the whole machine, in µs. */
async function cpuSnapshot(servers: ServerChild[]): Promise<{ servers: number[]; own: number; system: number }> {
  const own = process.cpuUsage();
  return {
    servers: await Promise.all(servers.map((server) => server.cpuMicros())),
    own: own.user + own.system,
    system: systemBusyMicros(),
  };
}

interface Tally {
  latencies: Float64Array[];
  seconds: number;
  non2xx: number;
  errors: number;
  frontCpu: number;
  upstreamCpu: number;
  otherCpu: number;
}

async function main(): Promise<void> {
  const upstream = await spawnServer('upstream', './serve-upstream.ts', ['--port', '0']);
  children.push(upstream);
  // Both front servers are profiled, so the gateway's profile can be read against the floor's.
  const profileFlags = (name: string): string[] => {
    if (!values.profile) return [];
    const dir = fileURLToPath(new URL(`./profiles/${name}/`, import.meta.url));
    mkdirSync(dir, { recursive: true });
    return ['--cpu-prof', '--cpu-prof-dir', dir];
  };
  const [gateway, proxy] = await Promise.all([
    spawnServer('tollgate', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url], profileFlags('tollgate')),
    spawnServer('bare-proxy', './serve-proxy.ts', ['--port', '0', '--upstream', upstream.url], profileFlags('bare-proxy')),
  ]);
  children.push(gateway, proxy);
  const servers = [upstream, gateway, proxy];
  const targets: Array<[TargetName, ServerChild]> = [
    ['upstream', upstream],
    ['tollgate', gateway],
    ['bare-proxy', proxy],
  ];

  for (const mode of modes) for (const [name, server] of targets) await checkTarget(server.url, name, mode);

  const cores = cpus().length;
  console.log(
    `overhead bench: ${durationSec} s per target in ${rounds} interleaved slices after ${warmupSec} s warm-up; ` +
      `connections ${connectionList.join(',')}; modes ${modes.join(',')}; node ${process.version}, ${cores} CPUs (${cpus()[0]?.model ?? 'unknown'})`,
  );
  const measurements: Measurement[] = [];
  for (const connections of connectionList) {
    for (const mode of modes) {
      const load = (name: TargetName, server: ServerChild, seconds: number) =>
        runLoad({ url: `${server.url}/v1/chat/completions`, body: body(name, mode), connections, durationSec: seconds });
      if (warmupSec > 0) for (const [name, server] of targets) await load(name, server, warmupSec);

      // Short slices that take turns (starting with a different target each round) rather than one long run
      // per target: a burst of other work on the machine then hits all three alike instead of one of them.
      const tallies = new Map<TargetName, Tally>();
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < targets.length; i++) {
          const [name, server] = targets[(round + i) % targets.length] as [TargetName, ServerChild];
          const before = await cpuSnapshot(servers);
          const slice = await load(name, server, durationSec / rounds);
          const after = await cpuSnapshot(servers);
          const serverCpu = servers.map((s, k) => (after.servers[k] ?? 0) - (before.servers[k] ?? 0));
          const ours = serverCpu.reduce((a, b) => a + b, 0) + (after.own - before.own);
          const tally = tallies.get(name) ?? { latencies: [], seconds: 0, non2xx: 0, errors: 0, frontCpu: 0, upstreamCpu: 0, otherCpu: 0 };
          tally.latencies.push(slice.latencies);
          tally.seconds += slice.durationSec;
          tally.non2xx += slice.non2xx;
          tally.errors += slice.errors;
          tally.frontCpu += serverCpu[servers.indexOf(server)] ?? 0;
          tally.upstreamCpu += serverCpu[0] ?? 0;
          tally.otherCpu += after.system - before.system - ours;
          tallies.set(name, tally);
        }
      }

      for (const [name] of targets) {
        const tally = tallies.get(name);
        if (!tally) continue;
        const sorted = mergeSorted(tally.latencies);
        const m: Measurement = {
          target: name,
          mode,
          connections,
          rps: sorted.length / tally.seconds,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          completed: sorted.length,
          non2xx: tally.non2xx,
          errors: tally.errors,
          cpuPerRequestUs: tally.frontCpu / sorted.length,
          upstreamCpuPerRequestUs: tally.upstreamCpu / sorted.length,
          backgroundCpuPct: (100 * Math.max(0, tally.otherCpu)) / (tally.seconds * 1e6 * cores),
        };
        measurements.push(m);
        console.log(
          `  ${name.padEnd(10)} ${mode.padEnd(6)} c=${String(connections).padEnd(3)} ${m.rps.toFixed(0)} req/s  ` +
            `p50 ${m.p50.toFixed(3)} ms  p99 ${m.p99.toFixed(3)} ms  non-2xx ${m.non2xx}  errors ${m.errors}`,
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
