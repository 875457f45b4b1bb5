// Issue 16's measure with each gateway process as its own baseline: the same processes take turns with metrics and
// traces off and on (switched live through PATCH /api/config, as an operator would), so a process's luck (where its
// heap and code landed, which core it mostly runs on; several percent for its whole life on a small VM, more than
// the cost measured) falls on both states alike instead of deciding which of two processes looks dearer.
//
//   npm run bench:observability:switched -- [--processes 2] [--rate 250] [--connections 10] [--modes json,stream]
//                                           [--warmup 30] [--rounds 18] [--slice 3] [--settle 1]
//                                           [--states off,metrics,both] [--node-flags "--trace-deopt"] [--pin]
//
// --pin (Linux, taskset, two cores or more) puts every gateway process on the last core and this process (the
// load), the upstream and the OTLP receiver on the others: a gateway's CPU per request then no longer depends on
// which core the scheduler moved it to and what ran there before (its caches), a spread of its own.
//
// All processes are loaded at the same time, each at --rate. In round r process p is in state (r + p) mod the number
// of states, so at every moment the states are spread over the processes (what the machine does in a slice falls
// on each state alike), and over the rounds every process spends as many slices in each state. After a switch each
// process runs --settle seconds unmeasured (the first requests of a newly subscribed path run unoptimized code),
// then a --slice seconds measured slice. The headline: per process, the median of its rounds' CPU per request in a
// state over the median in "off"; then the median of the processes.
//
// One difference from separate processes: the process-wide observers prom-client starts at the first scrape (GC,
// event-loop delay) keep running while a process's metrics are switched off, so "off" carries them too. They cost
// a sample every 100 ms and an entry per collection (bench/RESULTS.md): well under 1 µs a request.
import { execFileSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { runLoad } from './load.js';
import { spawnServer, untilLoaded, type ServerChild } from './spawn-server.js';

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '2' },
    rate: { type: 'string', default: '250' },
    connections: { type: 'string', default: '10' },
    modes: { type: 'string', default: 'json,stream' },
    warmup: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '18' },
    slice: { type: 'string', default: '3' },
    settle: { type: 'string', default: '1' },
    states: { type: 'string', default: 'off,metrics,both' },
    // Node flags for the gateway processes only (a profiler, a V8 trace), space-separated.
    'node-flags': { type: 'string', default: '' },
    pin: { type: 'boolean', default: false },
    // Each process's rounds too, state by state, in the order they ran.
    'show-rounds': { type: 'boolean', default: false },
  },
});

type State = 'off' | 'metrics' | 'both';
const processCount = Math.max(1, Number(values.processes));
const rate = Number(values.rate);
const connectionList = values.connections.split(',').map(Number);
const modes = values.modes.split(',') as Array<'json' | 'stream'>;
const warmupSec = Number(values.warmup);
const rounds = Number(values.rounds);
const sliceSec = Number(values.slice);
const settleSec = Number(values.settle);
const states = values.states.split(',') as State[];
const nodeFlags = values['node-flags'].split(' ').filter((flag) => flag !== '');
if (!states.includes('off') || states.some((state) => !['off', 'metrics', 'both'].includes(state))) throw new Error('--states: a list of off, metrics, both, with off in it');
if (!(rate > 0)) throw new Error('--rate must be above 0: processes loaded at once in a closed loop would compete for the cores');

/** The median of some figures (the mean of the middle two for an even count). */
function median(list: number[]): number {
  const sorted = [...list].sort((a, b) => a - b);
  const half = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? (sorted[half] as number) : ((sorted[half - 1] as number) + (sorted[half] as number)) / 2;
}

function body(mode: 'json' | 'stream'): string {
  const payload: Record<string, unknown> = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hello there, how are you today?' }] };
  if (mode === 'stream') Object.assign(payload, { stream: true, stream_options: { include_usage: true } });
  return JSON.stringify(payload);
}

const children: ServerChild[] = [];
try {
  const upstream = await spawnServer('upstream', './serve-upstream.ts', ['--port', '0']);
  const receiver = await spawnServer('otlp', './serve-otlp.ts', ['--port', '0']);
  children.push(upstream, receiver);
  const traces = `${receiver.url}/v1/traces`;
  const gateways = await Promise.all(
    // No tracing in their start config: a PATCH's `null` deletes the API's value, and the start config's would apply again.
    Array.from({ length: processCount }, (_, p) => spawnServer(`gateway-${p + 1}`, './serve-gateway.ts', ['--port', '0', '--upstream', upstream.url, '--metrics', 'on'], nodeFlags)),
  );
  children.push(...gateways);
  if (values.pin) {
    const last = availableParallelism() - 1;
    if (last < 1) throw new Error('--pin needs two cores or more');
    const others = last === 1 ? '0' : `0-${last - 1}`;
    // -a: every thread of the process (V8's helpers, libuv's pool), not only its main thread.
    const pin = (pid: number, cores: string) => execFileSync('taskset', ['-a', '-cp', cores, String(pid)], { stdio: 'ignore' });
    for (const gateway of gateways) pin(gateway.pid, String(last));
    for (const pid of [process.pid, upstream.pid, receiver.pid]) pin(pid, others);
  }
  await Promise.all(gateways.map((gateway) => untilLoaded(gateway)));

  const current = new Map<ServerChild, State>();
  /** Puts a gateway in a state through its config API (metrics and the tracing endpoint, both applied live). */
  const switchTo = async (gateway: ServerChild, state: State): Promise<void> => {
    if (current.get(gateway) === state) return;
    const settings = { metrics: { enabled: state !== 'off' }, tracing: { endpoint: state === 'both' ? traces : null, sample_ratio: 1 } };
    const answer = await fetch(`${gateway.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ settings }) });
    if (!answer.ok) throw new Error(`${gateway.name}: PATCH /api/config answered ${answer.status}: ${await answer.text()}`);
    await answer.text();
    // What the gateway now runs with, checked: a switch that did not take would compare a state with itself.
    const running = (await (await fetch(`${gateway.url}/api/config`)).json()) as { settings: { metrics: { enabled: boolean }; tracing: { endpoint: string | null } } };
    if (running.settings.metrics.enabled !== (state !== 'off') || (running.settings.tracing.endpoint !== null) !== (state === 'both')) {
      throw new Error(`${gateway.name}: asked for ${state}, runs with ${JSON.stringify({ metrics: running.settings.metrics, tracing: running.settings.tracing })}`);
    }
    current.set(gateway, state);
  };
  // A Prometheus server reads /metrics every 15 s from the gateways whose metrics are on.
  const scrape = () => Promise.all(gateways.filter((gateway) => current.get(gateway) !== 'off').map((gateway) => fetch(`${gateway.url}/metrics`).then((answer) => answer.text()))).catch(() => undefined);
  const scraper = setInterval(() => void scrape(), 15_000);
  scraper.unref();

  console.log(
    `observability, switched in place: ${processCount} gateway processes loaded together at ${rate} req/s each; states ${states.join(', ')} taking turns; ` +
      `${rounds} rounds of ${settleSec} s settling and a ${sliceSec} s slice after ${warmupSec} s of warm-up; ${values.pin ? 'gateways pinned to the last core; ' : ''}node ${process.version}`,
  );
  for (const connections of connectionList) {
    for (const mode of modes) {
      const load = (gateway: ServerChild, seconds: number) => runLoad({ url: `${gateway.url}/v1/chat/completions`, body: body(mode), connections, durationSec: seconds, rate });
      // Warm-up: every process runs each state's code paths before any slice is measured.
      for (const state of states) {
        await Promise.all(gateways.map((gateway) => switchTo(gateway, state)));
        await scrape();
        await Promise.all(gateways.map((gateway) => load(gateway, warmupSec / states.length)));
      }
      /** CPU µs a request, per process, per state, round by round. */
      const perRound = gateways.map(() => new Map<State, number[]>(states.map((state) => [state, []])));
      let non2xx = 0;
      let served = 0;
      for (let round = 0; round < rounds; round++) {
        await Promise.all(gateways.map((gateway, p) => switchTo(gateway, states[(round + p) % states.length] as State)));
        await Promise.all(
          gateways.map(async (gateway, p) => {
            await load(gateway, settleSec);
            const before = await gateway.cpuMicros();
            const slice = await load(gateway, sliceSec);
            const after = await gateway.cpuMicros();
            non2xx += slice.non2xx + slice.errors;
            served += slice.latencies.length;
            perRound[p]?.get(current.get(gateway) as State)?.push((after - before) / Math.max(1, slice.latencies.length));
          }),
        );
      }
      console.log(`\n#### ${mode}, ${connections} connection${connections === 1 ? '' : 's'} (${served} requests measured, ${non2xx} not 2xx)\n`);
      console.log(`| process | ${states.map((state) => `${state}: CPU µs/req, median of rounds`).join(' | ')} | ${states.slice(1).map((state) => `${state} over off`).join(' | ')} |`);
      console.log(`| --- | ${states.map(() => '---:').join(' | ')} | ${states.slice(1).map(() => '---:').join(' | ')} |`);
      const rises = new Map<State, number[]>(states.map((state) => [state, []]));
      perRound.forEach((byState, p) => {
        const medians = states.map((state) => median(byState.get(state) ?? []));
        const off = medians[states.indexOf('off')] as number;
        const overOff = states.slice(1).map((state, i) => {
          const rise = ((medians[i + 1] as number) / off - 1) * 100;
          rises.get(state)?.push(rise);
          return `${rise.toFixed(1)}%`;
        });
        console.log(`| ${gateways[p]?.name} | ${medians.map((value) => value.toFixed(1)).join(' | ')} | ${overOff.join(' | ')} |`);
      });
      if (values['show-rounds']) {
        perRound.forEach((byState, p) => {
          for (const state of states) console.error(`${gateways[p]?.name} ${state}: ${(byState.get(state) ?? []).map((value) => value.toFixed(0)).join(' ')}`);
        });
      }
      console.log(`| median of processes | ${states.map(() => '').join(' | ')} | ${states.slice(1).map((state) => `${median(rises.get(state) ?? []).toFixed(1)}%`).join(' | ')} |`);
    }
  }
  clearInterval(scraper);
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await Promise.all(children.map((child) => child.stop()));
}
