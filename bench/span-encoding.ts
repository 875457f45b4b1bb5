// The OTLP protobuf encoder alone, in a tight loop: one traced request's spans (seven stage spans without
// attributes, an upstream attempt with eight, the request span with its twenty) added to a batch that is taken every
// 2,048 spans, as the tracer does. Prints the CPU per request, the fastest and the median of twelve rounds of
// 100,000. In the gateway the same work costs about twice as much (its caches hold the rest of the request), so
// this tells encoders apart; the gateway's own figure is bench/observability.ts's.
//
//   npx tsx bench/span-encoding.ts
import { SpanKind } from '@opentelemetry/api';
import { ProtoSpanBatch } from '../src/telemetry/tracing/otlp-proto.js';
import { newSpanId, newTraceId, type SpanRecord } from '../src/telemetry/tracing/span-record.js';

const batch = new ProtoSpanBatch({ resource: ['service.name', 'tollgate', 'service.version', '1.0.0'], scope: { name: 'tollgate', version: '1.0.0' } });
const record: SpanRecord = {
  traceId: newTraceId(), traceState: undefined, idHigh: 0, idLow: 0, parentHigh: 0, parentLow: 0, name: '', nameTail: null, kind: SpanKind.INTERNAL, startedAt: 0, endedAt: 0, attributes: null, error: null,
};
const stages = ['auth', 'rate-limit', 'cache', 'route', 'guardrails', 'spend', 'call'].map((stage) => `stage ${stage}`);

function oneRequest(i: number): void {
  record.traceId = newTraceId();
  const at = performance.now();
  for (const name of stages) {
    newSpanId(record);
    Object.assign(record, { parentHigh: 123, parentLow: 456, name, nameTail: null, kind: SpanKind.INTERNAL, startedAt: at, endedAt: at + 0.1, attributes: null });
    batch.add(record);
  }
  newSpanId(record);
  record.name = 'chat';
  record.nameTail = 'gpt-4o-mini';
  record.kind = SpanKind.CLIENT;
  record.attributes = attemptList;
  batch.add(record);
  newSpanId(record);
  record.name = 'chat';
  record.nameTail = 'openai/gpt-4o-mini';
  record.kind = SpanKind.SERVER;
  record.parentHigh = 0;
  record.parentLow = 0;
  // The request's own values go into the list the tracer reuses, as it does (its names stay put).
  requestList[7] = `req_${i}abcdefghijklmnop`;
  record.attributes = requestList;
  batch.add(record);
  if (batch.count >= 2048) batch.take();
}

/** The attempt span's and the request span's attribute lists, filled once and reused, as the tracer reuses its own. */
const attemptList = [
  'gen_ai.operation.name', 'chat', 'gen_ai.provider.name', 'openai', 'tollgate.provider', 'openai', 'gen_ai.request.model', 'gpt-4o-mini',
  'tollgate.attempt', 1, 'tollgate.fallback', false, 'http.response.status_code', 200, 'error.type', null,
];
const requestList = [
  'gen_ai.operation.name', 'chat', 'gen_ai.request.model', 'openai/gpt-4o-mini', 'tollgate.dialect', 'openai', 'tollgate.request_id', '',
  'tollgate.stream', false, 'url.path', '/v1/chat/completions', 'http.response.status_code', 200, 'gen_ai.provider.name', 'openai', 'tollgate.provider', 'openai',
  'gen_ai.response.model', 'gpt-4o-mini-2024-07-18', 'gen_ai.usage.input_tokens', 12, 'gen_ai.usage.output_tokens', 20, 'gen_ai.response.finish_reasons', ['stop'],
  'tollgate.route', null, 'tollgate.key', null, 'tollgate.team', null, 'tollgate.cost_usd', 0.0000071, 'tollgate.fallback', false, 'tollgate.attempts', 1,
  'tollgate.time_to_first_token_ms', null, 'tollgate.cancelled', null,
];

const rounds: number[] = [];
for (let round = 0; round < 12; round++) {
  const requests = 100_000;
  const started = process.cpuUsage();
  for (let i = 0; i < requests; i++) oneRequest(i);
  const used = process.cpuUsage(started);
  rounds.push(((used.user + used.system) / requests) * 1000);
}
rounds.sort((a, b) => a - b);
console.log(`span encoding: fastest round ${(rounds[0] as number).toFixed(0)} ns, median ${(rounds[6] as number).toFixed(0)} ns per request (nine spans)`);
