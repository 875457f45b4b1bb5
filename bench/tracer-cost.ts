// The tracer's own cost per request, in process and without the HTTP server around it: publishes what the runner
// and the call stage publish for one request (the request, one upstream attempt, the terminal event) and records
// its five stages in the request's stage timeline as the runner does, with the real RequestTracer subscribed and
// exporting to a live OTLP receiver in its own process (so only the tracer's side is counted: building, encoding
// and posting the spans). Figures only.
//
//   npx tsx bench/tracer-cost.ts [--requests 40000] [--sample 1] [--protocol http/protobuf|http/json] [--only traced|baseline] [--compression gzip]
import { constants, PerformanceObserver, type PerformanceEntry } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { EventBus } from '../src/bus/bus.js';
import { resolveRuntimeConfig } from '../src/config/runtime.js';
import { createRequestContext } from '../src/core/context.js';
import type { RequestSummary } from '../src/core/events.js';
import { requestChannel, upstreamChannel, type UpstreamTraceMessage } from '../src/core/trace-channels.js';
import { createLog } from '../src/log.js';
import { RequestTracer } from '../src/telemetry/tracing/request-tracer.js';
import { OutboundNetwork } from '../src/network/outbound-network.js';
import { spawnServer } from './spawn-server.js';

const { values } = parseArgs({
  // `--only traced` (or `baseline`): runs of that kind alone, so a CPU profile of the process (node --cpu-prof) holds one
  // kind and two processes' profiles can be compared with bench/profile-diff.ts.
  options: { requests: { type: 'string', default: '40000' }, sample: { type: 'string', default: '1' }, protocol: { type: 'string', default: 'http/protobuf' }, only: { type: 'string' }, compression: { type: 'string', default: 'none' } },
});
const total = Number(values.requests);
const STAGES = ['auth', 'rate-limit', 'route', 'spend', 'call'];

const receiver = await spawnServer('otlp', './serve-otlp.ts', ['--port', '0']);
const endpoint = `${receiver.url}/v1/traces`;

const config = resolveRuntimeConfig({ api: {}, file: {} }, {}, 0);
const bus = new EventBus();
const tracer = new RequestTracer(bus, createLog('silent'), '0.0.0', new OutboundNetwork());

function oneRequest(): void {
  const ctx = createRequestContext({ dialect: 'openai', path: '/v1/chat/completions', config, request: { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] } });
  bus.emit('request.received', { requestId: ctx.id, dialect: 'openai', model: ctx.request.model, stream: false, at: Date.now() });
  requestChannel.start.publish({ requestId: ctx.id, ctx });
  // What the runner does for each stage of a request the tracer records: one entry in its stage timeline.
  const timeline = ctx.timings.stages;
  const runs = timeline ? STAGES.map((stage) => timeline.started(stage, performance.now())) : [];
  const attempt: UpstreamTraceMessage = { requestId: ctx.id, ctx, provider: 'openai', model: 'gpt-4o-mini', attempt: 1, fallback: false, headers: {} };
  upstreamChannel.start.publish(attempt);
  Object.assign(attempt, { ok: true, status: 200, errorCode: null });
  upstreamChannel.asyncEnd.publish(attempt);
  for (const run of runs.reverse()) timeline?.ended(run, performance.now(), run === runs[0] ? 'answered' : 'passed');
  const summary: RequestSummary = {
    requestId: ctx.id, dialect: 'openai', path: ctx.path, operation: 'chat', model: ctx.request.model, route: null, provider: 'openai',
    upstreamModel: 'gpt-4o-mini', keyId: null, teamId: null, stream: false, status: 200, durationMs: 1, attempts: 1, fallback: false,
    upstreamMs: 0.5, firstTokenMs: 0.9, finishReasons: ['stop'], user: null, metadata: null, bodies: null, cache: null, guardrails: null,
    usage: { input_tokens: 12, output_tokens: 9, cache_read_tokens: 0, cache_write_tokens: 0 }, costUsd: 0.0000071, priced: true, estimated: false,
  };
  bus.emit('request.completed', { ...summary, cancelled: false });
}

async function run(label: string, traced: boolean): Promise<void> {
  tracer.configure({
    endpoint: traced ? endpoint : null,
    headers: {},
    serviceName: 'bench',
    resourceAttributes: {},
    sampleRatio: Number(values.sample),
    protocol: values.protocol === 'http/json' ? 'http/json' : 'http/protobuf',
    compression: values.compression === 'gzip' ? 'gzip' : 'none',
  });
  for (let i = 0; i < 2000; i++) oneRequest();
  await new Promise((resolve) => setTimeout(resolve, 1200));
  // Young-generation collections during the run: what a request allocates shows as how often they come.
  let scavenges = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
  });
  gc.observe({ entryTypes: ['gc'] });
  const started = process.cpuUsage();
  for (let i = 0; i < total; i++) {
    oneRequest();
    // Paced to about 5,000 requests a second, so batches go out as they would between requests (none dropped).
    if (i % 50 === 49) await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const used = process.cpuUsage(started);
  gc.disconnect();
  console.log(`${label}: ${((used.user + used.system) / total).toFixed(1)} µs per request, ${((scavenges / total) * 10_000).toFixed(1)} scavenges per 10,000 requests`);
}

for (let i = 0; i < 2; i++) {
  if (values.only !== 'traced') await run('no endpoint (baseline: context and publishes only)', false);
  if (values.only !== 'baseline') await run(`traced (sample ${values.sample})`, true);
}
await tracer.close();
await receiver.stop();
