// The performance suite (`npm run bench`): one run, side by side, interleaved slices, against the same scripted
// upstream (20-piece answers; 20 content chunks when streamed):
//   upstream direct (the floor), a bare undici pass-through proxy (the baseline), the Portkey gateway,
//   tollgate as installed (anonymous, request log and metrics on), the same with a virtual key (rate limit and
//   budget), and tollgate with everything on
//   (virtual key with rate limit and budget, request log, metrics, every request traced to a live OTLP receiver,
//   response cache with misses and, separately, hits, guardrail regex/PII/secret rules on both sides).
// Non-streamed requests are driven by autocannon (latency to the whole answer); streams by a client that times the
// first and the last byte. It prints one table per mode and a summary of tollgate's figures against the proxy's.
//
//   npm run bench -- [--duration 6] [--rounds 3] [--warmup 1] [--connections 1,10,50] [--modes json,stream]
//                    [--targets upstream,proxy,portkey,tollgate,tollgate-key,full-miss,full-hit] [--profile]
//                    (also `fastify`: a fastify + undici relay that parses the JSON both ways and does nothing else,
//                    the floor of the stack tollgate is built on; not in the default set)
//                    [--alloc-profile]
import { mkdirSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mergeSorted, percentile, runLoad } from './load.js';
import { portkeyHeaders, startPortkey } from './serve-portkey.js';
import { spawnServer, untilLoaded, type ServerChild } from './spawn-server.js';
import { runStreamLoad } from './stream-load.js';
import { formatSuite, type SuiteRow } from './suite-report.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '6' },
    warmup: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '1,10,50' },
    modes: { type: 'string', default: 'json,stream' },
    targets: { type: 'string', default: 'upstream,proxy,portkey,tollgate,tollgate-key,full-miss,full-hit' },
    pieces: { type: 'string', default: '20' },
    // V8 CPU profiles of the tollgate processes, written to bench/profiles/suite-<name>/ when they exit.
    profile: { type: 'boolean', default: false },
    // Allocation sampling profiles of the tollgate processes (bench/alloc-profile.mjs), written to
    // bench/profiles/suite-alloc/ when they exit; read them with bench/alloc-summary.ts.
    'alloc-profile': { type: 'boolean', default: false },
  },
});
const durationSec = Number(values.duration);
const warmupSec = Number(values.warmup);
const rounds = Number(values.rounds);
const connectionList = values.connections.split(',').map(Number);
const modes = values.modes.split(',') as Array<'json' | 'stream'>;
const wanted = new Set(values.targets.split(','));

interface Target {
  name: string;
  server: ServerChild;
  headers: Record<string, string>;
  model: string;
  /** Each request asks something new (a cache miss); otherwise the same prompt every time. */
  unique: boolean;
}

const children: ServerChild[] = [];
async function stopAll(): Promise<void> {
  await Promise.all(children.map((child) => child.stop()));
}
process.once('SIGINT', () => void stopAll().finally(() => process.exit(130)));

function profileFlags(name: string): string[] {
  if (values['alloc-profile'] && name !== 'proxy') {
    const dir = fileURLToPath(new URL('./profiles/suite-alloc/', import.meta.url));
    mkdirSync(dir, { recursive: true });
    process.env.TOLLGATE_ALLOC_PROFILE_DIR = dir;
    return ['--import', fileURLToPath(new URL('./alloc-profile.mjs', import.meta.url))];
  }
  if (!values.profile) return [];
  const dir = fileURLToPath(new URL(`./profiles/suite-${name}/`, import.meta.url));
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-dir', dir];
}

let counter = 0;
function bodyFor(target: Target, mode: 'json' | 'stream'): () => string {
  return () => {
    const question = target.unique ? `hello there, how are you today? This is question ${++counter}.` : 'hello there, how are you today?';
    const payload: Record<string, unknown> = { model: target.model, messages: [{ role: 'user', content: question }] };
    if (mode === 'stream') Object.assign(payload, { stream: true, stream_options: { include_usage: true } });
    return JSON.stringify(payload);
  };
}

/** One request per target and mode before measuring: a target that answers with errors would look fast. */
async function check(target: Target, mode: 'json' | 'stream'): Promise<string | null> {
  const response = await fetch(`${target.server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', ...target.headers },
    body: bodyFor(target, mode)(),
  });
  const text = await response.text();
  const ok = response.status === 200 && text.includes('word19') && (mode === 'json' || text.includes('[DONE]'));
  return ok ? null : `${target.name} (${mode}) answered ${response.status}: ${text.slice(0, 300)}`;
}

async function virtualKey(gateway: ServerChild): Promise<string> {
  const response = await fetch(`${gateway.url}/api/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: process.env.BENCH_KEY_BODY ?? JSON.stringify({ name: 'bench', budget: 1_000_000, budget_period: 'monthly', rate_limit: 10_000_000, tokens_per_minute: 1_000_000_000 }),
  });
  if (response.status !== 201) throw new Error(`creating the bench key: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { key: string }).key;
}

async function startTargets(): Promise<Target[]> {
  const upstream = await spawnServer('upstream', './serve-upstream.ts', ['--port', '0', '--pieces', values.pieces]);
  children.push(upstream);
  const targets: Target[] = [];
  const plain = { model: 'gpt-4o-mini', unique: false, headers: {} };
  if (wanted.has('upstream')) targets.push({ name: 'upstream direct', server: upstream, ...plain });
  if (wanted.has('proxy')) {
    const proxy = await spawnServer('bare-proxy', './serve-proxy.ts', ['--port', '0', '--upstream', upstream.url], profileFlags('proxy'));
    children.push(proxy);
    targets.push({ name: 'bare proxy', server: proxy, ...plain });
  }
  if (wanted.has('fastify')) {
    const relay = await spawnServer('fastify-relay', './serve-fastify-relay.ts', ['--port', '0', '--upstream', upstream.url], profileFlags('fastify'));
    children.push(relay);
    targets.push({ name: 'fastify relay', server: relay, ...plain });
  }
  if (wanted.has('portkey')) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const portkey = await startPortkey(port);
    children.push(portkey);
    targets.push({ name: 'portkey', server: portkey, ...plain, headers: portkeyHeaders(upstream.url) });
  }
  if (wanted.has('tollgate') || wanted.has('tollgate-key')) {
    const gateway = await spawnServer('tollgate', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url], profileFlags('tollgate'));
    children.push(gateway);
    await untilLoaded(gateway);
    if (wanted.has('tollgate')) targets.push({ name: 'tollgate', server: gateway, model: 'openai/gpt-4o-mini', unique: false, headers: {} });
    // The same gateway with a virtual key (rate limit and budget): what a key adds (auth, limits, the spend commit).
    if (wanted.has('tollgate-key')) targets.push({ name: 'tollgate, virtual key', server: gateway, model: 'openai/gpt-4o-mini', unique: false, headers: { authorization: `Bearer ${await virtualKey(gateway)}` } });
  }
  if (wanted.has('full-miss') || wanted.has('full-hit')) {
    const receiver = await spawnServer('otlp', './serve-otlp.ts', ['--port', '0']);
    children.push(receiver);
    const full = await spawnServer('tollgate-full', './serve-full-gateway.ts', ['--port', '0', '--upstream', upstream.url, '--otlp', `${receiver.url}/v1/traces`], profileFlags('full'));
    children.push(full);
    await untilLoaded(full);
    const headers = { authorization: `Bearer ${await virtualKey(full)}` };
    if (wanted.has('full-miss')) targets.push({ name: 'tollgate full, cache miss', server: full, model: 'openai/gpt-4o-mini', unique: true, headers });
    if (wanted.has('full-hit')) targets.push({ name: 'tollgate full, cache hit', server: full, model: 'openai/gpt-4o-mini', unique: false, headers });
  }
  return targets;
}

interface Tally {
  first: Float64Array[];
  last: Float64Array[];
  seconds: number;
  non2xx: number;
  errors: number;
  cpu: number;
}

async function measure(target: Target, mode: 'json' | 'stream', connections: number, seconds: number): Promise<Omit<Tally, 'cpu'>> {
  const headers = { 'content-type': 'application/json', authorization: 'Bearer sk-bench', ...target.headers };
  const nextBody = bodyFor(target, mode);
  if (mode === 'json') {
    const slice = await runLoad({ url: `${target.server.url}/v1/chat/completions`, body: nextBody(), nextBody, headers, connections, durationSec: seconds });
    return { first: [slice.latencies], last: [slice.latencies], seconds: slice.durationSec, non2xx: slice.non2xx, errors: slice.errors };
  }
  const slice = await runStreamLoad({ origin: target.server.url, path: '/v1/chat/completions', headers, nextBody, connections, durationSec: seconds });
  return { first: [slice.firstByte], last: [slice.lastByte], seconds: slice.durationSec, non2xx: slice.non2xx, errors: slice.errors };
}

async function main(): Promise<void> {
  const all = await startTargets();
  // A baseline that cannot serve a mode is left out of that mode, saying why (the Portkey gateway 1.15's Node
  // build answers every stream with a 500: "TypeError: immutable", appending a header to a fetch Response);
  // tollgate failing its check fails the run.
  const targetsOf = new Map<'json' | 'stream', Target[]>();
  for (const mode of modes) {
    const serving: Target[] = [];
    for (const target of all) {
      const problem = await check(target, mode);
      if (!problem) serving.push(target);
      else if (target.name.startsWith('tollgate')) throw new Error(problem);
      else console.log(`left out of ${mode}: ${problem}`);
    }
    targetsOf.set(mode, serving);
  }
  console.log(
    `performance suite: ${durationSec} s per target in ${rounds} interleaved slices after ${warmupSec} s warm-up; connections ${connectionList.join(',')}; ` +
      `modes ${modes.join(',')}; ${values.pieces}-piece answers; node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? 'unknown'})`,
  );
  const rows: SuiteRow[] = [];
  for (const connections of connectionList) {
    for (const mode of modes) {
      const targets = targetsOf.get(mode) ?? [];
      if (warmupSec > 0) for (const target of targets) await measure(target, mode, connections, warmupSec);
      const tallies = new Map<Target, Tally>();
      for (let round = 0; round < rounds; round++) {
        for (let i = 0; i < targets.length; i++) {
          const target = targets[(round + i) % targets.length] as Target;
          const before = await target.server.cpuMicros();
          const slice = await measure(target, mode, connections, durationSec / rounds);
          const cpu = (await target.server.cpuMicros()) - before;
          const tally = tallies.get(target) ?? { first: [], last: [], seconds: 0, non2xx: 0, errors: 0, cpu: 0 };
          tally.first.push(...slice.first);
          tally.last.push(...slice.last);
          tally.seconds += slice.seconds;
          tally.non2xx += slice.non2xx;
          tally.errors += slice.errors;
          tally.cpu += cpu;
          tallies.set(target, tally);
        }
      }
      for (const target of targets) {
        const tally = tallies.get(target) as Tally;
        const first = mergeSorted(tally.first);
        const last = mergeSorted(tally.last);
        const row: SuiteRow = {
          target: target.name,
          mode,
          connections,
          rps: last.length / tally.seconds,
          p50: percentile(last, 50),
          p99: percentile(last, 99),
          firstP50: percentile(first, 50),
          firstP99: percentile(first, 99),
          cpuPerRequestUs: tally.cpu / last.length,
          non2xx: tally.non2xx,
          errors: tally.errors,
        };
        rows.push(row);
        console.log(
          `  ${target.name.padEnd(26)} ${mode.padEnd(6)} c=${String(connections).padEnd(3)} ${row.rps.toFixed(0).padStart(6)} req/s  ` +
            `p50 ${row.p50.toFixed(3)} ms  p99 ${row.p99.toFixed(3)} ms  CPU ${row.cpuPerRequestUs.toFixed(0)} µs/req  non-2xx ${row.non2xx}  errors ${row.errors}`,
        );
      }
    }
  }
  console.log(`\n${formatSuite(rows)}`);
  if (rows.some((row) => row.non2xx > 0 || row.errors > 0)) {
    console.error('\nWARNING: some runs had non-2xx answers or errors; their figures are not comparable.');
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
