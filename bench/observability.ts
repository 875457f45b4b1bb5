// The cost of observability: one run, gateways side by side on the same upstream: one with metrics off and no
// tracing, one with metrics on and every request traced (100% sampled) to a live local OTLP receiver (and one with
// metrics alone, to show how the cost splits). Reports each gateway's CPU per request (its own process) and latency.
//
//   npx tsx bench/observability.ts [--together --rate 500] [--duration 24] [--rounds 12] [--warmup 40]
//                                  [--connections 1,10] [--modes json,stream] [--profile] [--compare-dist ../wt/dist]
//                                  [--repeat 3]
//
// By default the gateways take turns (one slice each per round). With --together they are loaded at the same time,
// each at --rate: whatever else the machine does in a slice (another tenant of this VM, a CPU frequency change)
// then falls on all three alike instead of on whichever had its turn, and no gateway sits idle between its slices
// (one that does pays for waking up: its first slice after a pause costs it more).
//
// The warm-up matters more than anything else here: a gateway's CPU per request keeps falling for 30-40 s at 500
// requests a second (V8 optimizing the request path, the heap finding its size), from several times the steady
// figure; slices taken before that measure the warm-up, not the code. The headline is the median of the rounds'
// CPU per request, which one slow slice (a collection, a neighbour) does not move.
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mergeSorted, percentile, runLoad } from './load.js';
import { spawnServer, untilLoaded, type ServerChild } from './spawn-server.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '24' },
    warmup: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '12' },
    connections: { type: 'string', default: '1,10' },
    modes: { type: 'string', default: 'json,stream' },
    // Requests per second for every gateway alike (0: as fast as each answers). At a fixed rate each gateway does
    // the same work per second, so CPU per request compares the code, not how well a saturated process batches.
    rate: { type: 'string', default: '0' },
    // The traced gateway's sample ratio (the issue's measure is 1: every request traced).
    sample: { type: 'string', default: '1' },
    // All three gateways loaded at once in every slice (needs --rate), instead of one after another.
    together: { type: 'boolean', default: false },
    // Another build's dist/ directory (an earlier commit's, built in a git worktree): a fourth gateway, that build
    // with metrics and traces on, loaded in the same slices, to compare two builds' cost in one run.
    'compare-dist': { type: 'string' },
    // V8 CPU profiles of the three gateways, written to bench/profiles/observability-<name>/ when they exit
    // (compare them per request with bench/profile-diff.ts).
    profile: { type: 'boolean', default: false },
    // Runs of the whole measure, each with gateways started afresh: a process's luck (where its heap and code
    // landed, which core it mostly ran on) moves its CPU per request by several percent for its whole life, which
    // rounds within one set of processes cannot average out. The summary gives each run's rise and their median.
    repeat: { type: 'string', default: '1' },
  },
});

function profileFlags(name: string): string[] {
  if (!values.profile) return [];
  const dir = fileURLToPath(new URL(`./profiles/observability-${name}/`, import.meta.url));
  mkdirSync(dir, { recursive: true });
  return ['--cpu-prof', '--cpu-prof-dir', dir];
}
const durationSec = Number(values.duration);
const warmupSec = Number(values.warmup);
const rounds = Number(values.rounds);
const connectionList = values.connections.split(',').map(Number);
const modes = values.modes.split(',') as Array<'json' | 'stream'>;
const rate = Number(values.rate);
const together = values.together;
const repeat = Math.max(1, Number(values.repeat));
/** Each run's rise in CPU per request with both on, by mode and connections: medians of rounds, whole run, round by round. */
const rises = new Map<string, Array<[number, number, number]>>();
if (together && !(rate > 0)) throw new Error('--together needs --rate: three closed loops at once would compete for the cores');

/** The median of some figures (the upper one of the middle two for an even count). */
function middle(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function body(mode: 'json' | 'stream'): string {
  const payload: Record<string, unknown> = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello there, how are you today?' }] };
  if (mode === 'stream') Object.assign(payload, { stream: true, stream_options: { include_usage: true } });
  return JSON.stringify(payload);
}

let children: ServerChild[] = [];
/** Requests each gateway answered over the whole run, warm-up included (what its CPU profile covers). */
const served = new Map<ServerChild, number>();

async function main(run: number): Promise<void> {
  const upstream = await spawnServer('upstream', './serve-upstream.ts', ['--port', '0']);
  const receiver = await spawnServer('otlp', './serve-otlp.ts', ['--port', '0']);
  children.push(upstream, receiver);
  const receiverCpuAtStart = await receiver.cpuMicros();
  const [off, metricsOnly, on] = await Promise.all([
    spawnServer('off', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url, '--metrics', 'off'], profileFlags('off')),
    spawnServer('metrics', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url, '--metrics', 'on'], profileFlags('metrics')),
    spawnServer('on', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url, '--metrics', 'on', '--otlp', `${receiver.url}/v1/traces`, '--sample', values.sample], profileFlags('on')),
  ]);
  children.push(off, metricsOnly, on);
  // The first is the baseline, the last the issue's measure (both on); metrics alone shows how the cost splits.
  const targets: Array<[string, ServerChild]> = [
    ['metrics off, no traces', off],
    ['metrics on, no traces', metricsOnly],
    [`metrics on, traces ${Number(values.sample) * 100}%`, on],
  ];
  const compareDist = values['compare-dist'];
  await Promise.all([off, metricsOnly, on].map((server) => untilLoaded(server)));
  if (compareDist) {
    const otlp = ['--otlp', `${receiver.url}/v1/traces`, '--sample', values.sample];
    const other = await spawnServer('other', './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url, '--metrics', 'on', ...otlp], profileFlags('other'), { TOLLGATE_BENCH_DIST: compareDist });
    children.push(other);
    await untilLoaded(other);
    targets.splice(2, 0, [`${compareDist}, metrics on, traces ${Number(values.sample) * 100}%`, other]);
  }
  // Metrics on means scraped: a Prometheus server reads /metrics every 15 s (a common interval), and the first scrape
  // starts the process metrics' event-loop delay and GC observers, which then run for good. The gateway with metrics
  // off has no /metrics to read.
  const scraped = targets.slice(1).map(([, server]) => server);
  const scrapeAll = () => Promise.all(scraped.map((server) => fetch(`${server.url}/metrics`).then((answer) => answer.text()))).catch(() => undefined);
  await scrapeAll();
  const scraper = setInterval(() => void scrapeAll(), 15_000);
  scraper.unref();
  console.log(
    `${repeat > 1 ? `\n### Run ${run + 1} of ${repeat}\n\n` : ''}observability bench: ${durationSec} s per gateway in ${rounds} interleaved slices after ${warmupSec} s warm-up; ` +
      `${rate > 0 ? `${rate} req/s each` : 'closed loop (as fast as answered)'}${together ? ', all gateways loaded at the same time' : ''}; node ${process.version}`,
  );
  console.log('\n| mode | conns | gateway | RPS | p50 ms | p99 ms | CPU µs/req, median of rounds | CPU µs/req, whole run | non-2xx |');
  console.log('| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const connections of connectionList) {
    for (const mode of modes) {
      const load = async (server: ServerChild, seconds: number) => {
        const result = await runLoad({ url: `${server.url}/v1/chat/completions`, body: body(mode), connections, durationSec: seconds, ...(rate > 0 ? { rate } : {}) });
        served.set(server, (served.get(server) ?? 0) + result.latencies.length);
        return result;
      };
      if (warmupSec > 0) {
        if (together) await Promise.all(targets.map(([, server]) => load(server, warmupSec)));
        else for (const [, server] of targets) await load(server, warmupSec);
      }
      const tallies = new Map<string, { latencies: Float64Array[]; seconds: number; cpu: number; non2xx: number; perRound: number[] }>();
      /** One slice of load on one gateway, its CPU read before and after. */
      const measure = async ([name, server]: [string, ServerChild]) => {
        const before = await server.cpuMicros();
        const slice = await load(server, durationSec / rounds);
        const after = await server.cpuMicros();
        const tally = tallies.get(name) ?? { latencies: [], seconds: 0, cpu: 0, non2xx: 0, perRound: [] };
        tally.perRound.push((after - before) / Math.max(1, slice.latencies.length));
        tally.latencies.push(slice.latencies);
        tally.seconds += slice.durationSec;
        tally.cpu += after - before;
        tally.non2xx += slice.non2xx + slice.errors;
        tallies.set(name, tally);
      };
      for (let round = 0; round < rounds; round++) {
        if (together) await Promise.all(targets.map(measure));
        else for (let i = 0; i < targets.length; i++) await measure(targets[(round + i) % targets.length] as [string, ServerChild]);
      }
      const cpu: number[] = [];
      const medianCpu: number[] = [];
      for (const [name] of targets) {
        const tally = tallies.get(name);
        if (!tally) continue;
        const sorted = mergeSorted(tally.latencies);
        const median = middle(tally.perRound);
        cpu.push(tally.cpu / sorted.length);
        medianCpu.push(median);
        console.log(
          `| ${mode} | ${connections} | ${name} | ${(sorted.length / tally.seconds).toFixed(0)} | ${percentile(sorted, 50).toFixed(3)} | ${percentile(sorted, 99).toFixed(3)} | ${median.toFixed(1)} | ${(tally.cpu / sorted.length).toFixed(1)} | ${tally.non2xx} |`,
        );
      }
      const riseOf = (list: number[]) => (((list.at(-1) as number) - (list[0] as number)) / (list[0] as number)) * 100;
      const rise = (list: number[]) => riseOf(list).toFixed(1);
      console.log(`|  |  | CPU per request with both on | ${rise(medianCpu)}% (medians of rounds), ${rise(cpu)}% (whole run) | | | | | |`);
      // The same rise round by round (both gateways' slices of one round ran at the same time).
      const offRounds = tallies.get(targets[0]?.[0] ?? '')?.perRound ?? [];
      const onRounds = tallies.get(targets.at(-1)?.[0] ?? '')?.perRound ?? [];
      const roundRises = onRounds.map((value, round) => ((value - (offRounds[round] as number)) / (offRounds[round] as number)) * 100).sort((a, b) => a - b);
      const at = (q: number) => roundRises[Math.min(roundRises.length - 1, Math.floor(q * (roundRises.length - 1) + 0.5))] as number;
      if (roundRises.length >= 4) {
        console.log(`|  |  | the same, round by round | median ${at(0.5).toFixed(1)}%, middle half ${at(0.25).toFixed(1)}% to ${at(0.75).toFixed(1)}% (${roundRises.length} rounds) | | | | | |`);
      }
      const key = `${mode} | ${connections}`;
      rises.set(key, [...(rises.get(key) ?? []), [riseOf(medianCpu), riseOf(cpu), roundRises.length > 0 ? at(0.5) : Number.NaN]]);
    }
  }
  clearInterval(scraper);
  if (values.profile) {
    console.log(`\nrequests served, for bench/profile-diff.ts: ${targets.map(([name, server]) => `${name} ${served.get(server) ?? 0}`).join('; ')}`);
  }
  // The collector's side, for the record: it runs on the same two cores as everything else.
  const receiverCpu = (await receiver.cpuMicros()) - receiverCpuAtStart;
  console.log(`\nthe OTLP receiver used ${(receiverCpu / Math.max(1, served.get(on) ?? 0)).toFixed(1)} µs of CPU per traced request`);
  const scrape = await (await fetch(`${on.url}/metrics`)).text();
  const requests = /^tollgate_requests_total\{[^}]*status="200"\} (\d+)/m.exec(scrape)?.[1];
  console.log(`\n/metrics of the traced gateway: tollgate_requests_total{status="200"} ${requests ?? 'missing'}`);
}

try {
  for (let run = 0; run < repeat; run++) {
    try {
      await main(run);
    } finally {
      // Every run starts its processes afresh (served counts per process go with them).
      await Promise.all(children.map((child) => child.stop()));
      children = [];
    }
  }
  if (repeat > 1) {
    console.log(`\n### CPU per request with both on, over both off: each run's rise (medians of rounds / whole run / round by round) and the median of the ${repeat} runs\n`);
    console.log(`| mode | conns | ${Array.from({ length: repeat }, (_, run) => `run ${run + 1}`).join(' | ')} | median of runs |`);
    console.log(`| --- | ---: | ${Array.from({ length: repeat + 1 }, () => '---').join(' | ')} |`);
    for (const [key, list] of rises) {
      const cell = (three: readonly number[]) => three.map((value) => `${value.toFixed(1)}%`).join(' / ');
      const medians = [0, 1, 2].map((reading) => middle(list.map((three) => three[reading] as number)));
      console.log(`| ${key} | ${list.map(cell).join(' | ')} | ${cell(medians)} |`);
    }
  }
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await Promise.all(children.map((child) => child.stop()));
}
