// The metrics subscriber's own cost per request, in process: the bus events one request emits (received, one
// upstream attempt, completed, stream or not) with GatewayMetrics subscribed, against the same events with no
// subscriber. Figures only.
//
//   npx tsx bench/metrics-cost.ts [--requests 200000]
import { parseArgs } from 'node:util';
import { EventBus } from '../src/bus/bus.js';
import type { RequestSummary } from '../src/core/events.js';
import { GatewayMetrics, type MetricsSources } from '../src/telemetry/metrics/gateway-metrics.js';
import { resolveRuntimeConfig } from '../src/config/runtime.js';

const config = resolveRuntimeConfig({ api: {}, file: {} }, {}, 0);

const { values } = parseArgs({ options: { requests: { type: 'string', default: '200000' } } });
const total = Number(values.requests);
const MODELS = ['gpt-4o-mini', 'gpt-4o', 'claude-sonnet-4', 'gemini-2.5-flash'];

function oneRequest(bus: EventBus, i: number): void {
  const requestId = `req-${i}`;
  const model = MODELS[i % MODELS.length] as string;
  const stream = i % 2 === 0;
  bus.emit('request.received', { requestId, dialect: 'openai', model: `openai/${model}`, stream, at: Date.now() });
  bus.emit('provider.attempted', { requestId, provider: 'openai', model, attempt: 1, ok: true, status: 200, durationMs: 0.8 });
  const summary: RequestSummary = {
    requestId, dialect: 'openai', path: '/v1/chat/completions', operation: 'chat', model: `openai/${model}`, route: null, provider: 'openai',
    upstreamModel: model, keyId: null, teamId: null, stream, status: 200, durationMs: 1.2, attempts: 1, fallback: false,
    upstreamMs: 0.8, firstTokenMs: 0.9, finishReasons: ['stop'], user: null, metadata: null, bodies: null, cache: null, guardrails: null,
    usage: { input_tokens: 12, output_tokens: 9, cache_read_tokens: 0, cache_write_tokens: 0 }, costUsd: 0.0000071, priced: true, estimated: false,
  };
  bus.emit('request.completed', { ...summary, cancelled: false });
}

function run(label: string, withMetrics: boolean): number {
  const bus = new EventBus();
  // A real config (the default one): the model label's pools read its providers and routes.
  const sources = { bus, health: { all: () => [] }, governance: { keySpends: () => [] }, config: () => config, storeBytes: () => 0 } as unknown as MetricsSources;
  const metrics = withMetrics ? new GatewayMetrics(sources) : null;
  for (let i = 0; i < 20_000; i++) oneRequest(bus, i);
  const started = process.cpuUsage();
  for (let i = 0; i < total; i++) oneRequest(bus, i);
  const used = process.cpuUsage(started);
  metrics?.stop();
  const perRequest = (used.user + used.system) / total;
  console.log(`${label}: ${perRequest.toFixed(2)} µs per request`);
  return perRequest;
}

for (let round = 0; round < 3; round++) {
  const off = run('events only', false);
  const on = run('events + metrics', true);
  console.log(`  metrics: ${(on - off).toFixed(2)} µs per request`);
}
