import { createServer, type AddressInfo, type Socket } from 'node:net';
import { resolve } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startGeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

let upstream: ScriptedUpstream;
let backup: ScriptedUpstream;
let receiver: OtlpReceiver;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
  backup = await startOpenAIUpstream({ apiKey: 'sk-b', chunkDelayMs: 0 });
  receiver = new OtlpReceiver();
  await receiver.start();
  tg = await startGateway(
    {
      providers: {
        openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-a', prices: { m: { input_per_mtok: 1, output_per_mtok: 2 } } },
        backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-b', prices: { m: { input_per_mtok: 1, output_per_mtok: 2 } } },
        // Nothing listens on port 1: every call fails as 502.
        unreachable: { type: 'openai', base_url: 'http://127.0.0.1:1/v1', api_key: 'sk-c' },
      },
      routes: { chat: { targets: [{ model: 'openai/m' }], fallbacks: ['backup/m'], retry: { max_attempts: 2, initial_delay_ms: 0 } } },
    },
    // The standard variables turn tracing on, as they would for any OpenTelemetry SDK.
    { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'gateway-under-test' },
  );
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  await backup.close();
  await receiver.close();
});

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  it("gives a call refused before the pipeline (a body that is not JSON, an invalid request) its one span, under the client's trace", async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const clientSpan = 'b7ad6b7169203331';
    const headers = { 'content-type': 'application/json', traceparent: `00-${traceId}-${clientSpan}-01` };
    const notJson = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers, body: '{"model": "chat", ' });
    expect(notJson.status).toBe(400);
    const invalid = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers, body: JSON.stringify({ model: 'chat', messages: 'not a list' }) });
    expect(invalid.status).toBe(400);
    const spans = await receiver.waitFor((all) => all.filter((s) => s.traceId === traceId).length >= 2);
    const mine = spans.filter((s) => s.traceId === traceId);
    expect(mine).toHaveLength(2);
    for (const span of mine) {
      // A 4xx leaves a server span's status unset (the HTTP conventions); its type is in error.type.
      expect(span).toMatchObject({ kind: 2, parentSpanId: clientSpan, status: {} });
      expect(span.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'tollgate.dialect': 'openai', 'http.response.status_code': 400, 'url.path': '/v1/chat/completions' });
    }
    const ids = [notJson.headers.get('x-request-id'), invalid.headers.get('x-request-id')];
    expect(mine.map((span) => span.attributes['tollgate.request_id']).sort()).toEqual([...ids].sort());
    expect(mine.find((span) => span.attributes['tollgate.request_id'] === ids[0])?.attributes['error.type']).toBe('invalid_json');
    expect(mine.find((span) => span.attributes['tollgate.request_id'] === ids[1])?.attributes['gen_ai.request.model']).toBe('chat');
  });

  it("makes the client's traceparent the parent, nests stage and attempt spans, and carries the GenAI attributes", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` } });
    upstream.enqueue({ kind: 'error', status: 500 });
    const answer = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], user: 'alice' });
    expect(answer.choices[0]?.finish_reason).toBe('stop');

    const spans = await receiver.waitFor((all) => all.some((s) => s.traceId === TRACE_ID && s.kind === 2));
    const mine = spans.filter((s) => s.traceId === TRACE_ID);
    const root = mine.find((s) => s.kind === 2) as ReceivedSpan; // SERVER
    expect(root.parentSpanId).toBe(CLIENT_SPAN);
    expect(root.service).toBe('gateway-under-test');
    expect(root.name).toBe('chat chat');
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'chat',
      // The vendor as the GenAI conventions name it (`backup` is an OpenAI-type provider); the configured name beside it.
      'gen_ai.provider.name': 'openai',
      'tollgate.provider': 'backup',
      'gen_ai.response.model': 'm',
      'gen_ai.response.finish_reasons': ['stop'],
      'tollgate.route': 'chat',
      'tollgate.fallback': true,
      'http.response.status_code': 200,
    });
    expect(root.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(root.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(root.attributes['tollgate.cost_usd']).toBeGreaterThan(0);
    expect(root.attributes['tollgate.attempts']).toBe(2);
    // Nothing that did not happen: not cancelled, no error.
    expect(root.attributes).not.toHaveProperty('tollgate.cancelled');
    expect(root.attributes).not.toHaveProperty('error.type');

    // Stages nest as the onion does: auth under the request, each next stage under the one before.
    const byId = new Map(mine.map((s) => [s.spanId, s]));
    const stage = (name: string): ReceivedSpan => mine.find((s) => s.name === `stage ${name}`) as ReceivedSpan;
    expect(stage('auth').parentSpanId).toBe(root.spanId);
    expect(byId.get(stage('call').parentSpanId)?.name).toBe('stage spend');
    // The stage that answered says so; the ones that passed the request on carry no outcome; each lies within its parent.
    expect(stage('call').attributes['tollgate.stage.outcome']).toBe('answered');
    expect(stage('auth').attributes).not.toHaveProperty('tollgate.stage.outcome');
    for (const name of ['route', 'spend', 'call']) {
      const child = stage(name);
      const parent = byId.get(child.parentSpanId) as ReceivedSpan;
      expect(child.startTimeUnixNano >= parent.startTimeUnixNano).toBe(true);
      expect(child.endTimeUnixNano <= parent.endTimeUnixNano).toBe(true);
    }

    // Two attempts under the call stage: the failed one on the primary, the answer from the fallback.
    const attempts = mine.filter((s) => s.kind === 3); // CLIENT
    expect(attempts.map((s) => [s.attributes['gen_ai.provider.name'], s.attributes['tollgate.provider'], s.attributes['http.response.status_code'], s.attributes['tollgate.fallback']])).toEqual([
      ['openai', 'openai', 500, false],
      ['openai', 'backup', 200, true],
    ]);
    for (const attempt of attempts) expect(attempt.parentSpanId).toBe(stage('call').spanId);
    expect(attempts[0]?.status.code).toBe(2); // ERROR
    // The failed attempt names its error; the answered one has none.
    expect(attempts[0]?.attributes['error.type']).toBeTruthy();
    expect(attempts[1]?.attributes).not.toHaveProperty('error.type');

    // Protobuf by default (the OTLP default), with times in nanoseconds since 1970, children within their parent.
    expect(receiver.contentTypes[0]).toBe('application/x-protobuf');
    const nowNanos = BigInt(Date.now()) * 1_000_000n;
    expect(nowNanos - root.startTimeUnixNano).toBeLessThan(60_000_000_000n);
    expect(root.endTimeUnixNano >= root.startTimeUnixNano).toBe(true);
    for (const child of [...attempts, stage('auth'), stage('call')]) {
      expect(child.startTimeUnixNano >= root.startTimeUnixNano - 1_000_000n).toBe(true);
      expect(child.endTimeUnixNano <= root.endTimeUnixNano + 1_000_000n).toBe(true);
    }

    // Each upstream got the trace, its parent being the attempt span.
    expect(upstream.calls.at(-1)?.headers.traceparent).toBe(`00-${TRACE_ID}-${attempts[0]?.spanId}-01`);
    expect(backup.calls.at(-1)?.headers.traceparent).toBe(`00-${TRACE_ID}-${attempts[1]?.spanId}-01`);
  });

  it('starts a new trace for a request without traceparent, and marks a failed request as an error', async () => {
    const before = new Set(receiver.spans.map((s) => s.traceId));
    upstream.enqueue({ kind: 'error', status: 400, code: 'bad', message: 'no' });
    await expect(tg.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 400 });
    const spans = await receiver.waitFor((all) => all.some((s) => s.kind === 2 && !before.has(s.traceId)));
    const root = spans.find((s) => s.kind === 2 && !before.has(s.traceId)) as ReceivedSpan;
    expect(root.parentSpanId).toBe('');
    // A 4xx: the server span's status is left unset (the HTTP conventions); the attempt, a client span, is an error.
    expect(root.status).toEqual({});
    expect(spans.find((s) => s.traceId === root.traceId && s.kind === 3)?.status.code).toBe(2);
    expect(root.attributes['http.response.status_code']).toBe(400);
    expect(root.attributes['error.type']).toBeTruthy();
    // The failure went out through every stage: each span of the trace's stages is an error, marked as failed.
    const stages = spans.filter((s) => s.traceId === root.traceId && s.name.startsWith('stage '));
    // Anonymous, no guardrail rule, the cache off: rate-limit, guardrails and cache had nothing to do and have no span.
    expect(stages.map((s) => s.name).sort()).toEqual(['stage auth', 'stage call', 'stage route', 'stage spend']);
    for (const span of stages) {
      expect(span.status.code).toBe(2);
      expect(span.attributes['tollgate.stage.outcome']).toBe('failed');
    }
  });

  it('gives each request spans of its own when one follows another that failed over and failed in every stage', async () => {
    // The tracer reuses an ended request's span record (its stage timeline, ids and attempts): nothing of the
    // request before may show in the next one's spans.
    const first = '1af7651916cd43dd8448eb211c80319c';
    const second = '2af7651916cd43dd8448eb211c80319c';
    const traced = (traceId: string) => new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` } });
    upstream.enqueue({ kind: 'error', status: 500 });
    backup.enqueue({ kind: 'error', status: 400, code: 'bad', message: 'no' });
    await expect(traced(first).chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 400 });
    await traced(second).chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'y' }] });
    const spans = await receiver.waitFor((all) => [first, second].every((traceId) => all.some((s) => s.traceId === traceId && s.kind === 2)));
    const of = (traceId: string) => spans.filter((s) => s.traceId === traceId);
    const [before, after] = [of(first), of(second)];
    expect(before.filter((s) => s.kind === 3)).toHaveLength(2);
    expect(after.filter((s) => s.kind === 3)).toHaveLength(1);
    const stagesBefore = before.filter((s) => s.name.startsWith('stage ')).map((s) => s.name);
    const stagesAfter = after.filter((s) => s.name.startsWith('stage '));
    expect(stagesAfter.map((s) => s.name)).toEqual(stagesBefore);
    // Fresh ids, every parent within the request's own trace, and none of the failure's marks.
    const afterIds = new Set(after.map((s) => s.spanId));
    expect(afterIds.size).toBe(after.length);
    for (const span of before) expect(afterIds.has(span.spanId)).toBe(false);
    for (const span of after) if (span.kind !== 2) expect(afterIds.has(span.parentSpanId)).toBe(true);
    for (const span of stagesAfter) {
      expect(span.status).toEqual({});
      expect(span.attributes).not.toHaveProperty('tollgate.stage.outcome', 'failed');
    }
    const root = after.find((s) => s.kind === 2) as ReceivedSpan;
    expect(root.attributes).toMatchObject({ 'gen_ai.request.model': 'openai/m', 'http.response.status_code': 200, 'tollgate.attempts': 1, 'tollgate.fallback': false });
    expect(root.attributes).not.toHaveProperty('error.type');
    const attempt = after.find((s) => s.kind === 3) as ReceivedSpan;
    expect(attempt.attributes).toMatchObject({ 'tollgate.provider': 'openai', 'tollgate.attempt': 1, 'http.response.status_code': 200, 'tollgate.fallback': false });
    expect(attempt.attributes).not.toHaveProperty('error.type');
    expect(attempt.status).toEqual({});
  });

  it("traces only its own gateway's requests when two traced gateways share the process and serve at the same time", async () => {
    const otherReceiver = new OtlpReceiver();
    await otherReceiver.start();
    const other = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-a' } } }, { OTEL_EXPORTER_OTLP_ENDPOINT: otherReceiver.url });
    try {
      const ask = async (gateway: RunningGateway) => {
        const { response } = await gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] }).withResponse();
        return response.headers.get('x-request-id') as string;
      };
      const asked = await Promise.all(Array.from({ length: 12 }, (_, index) => ask(index % 2 === 0 ? tg : other)));
      const [mine, theirs] = [asked.filter((_, index) => index % 2 === 0), asked.filter((_, index) => index % 2 === 1)];
      const servedBy = (spans: ReceivedSpan[]) => new Set(spans.filter((s) => s.kind === 2).map((s) => s.attributes['tollgate.request_id'] as string));
      const ownSpans = await receiver.waitFor((all) => mine.every((id) => servedBy(all).has(id)));
      const otherSpans = await otherReceiver.waitFor((all) => theirs.every((id) => servedBy(all).has(id)));
      for (const id of theirs) expect(servedBy(ownSpans).has(id)).toBe(false);
      for (const id of mine) expect(servedBy(otherSpans).has(id)).toBe(false);
      // Each request's stage spans went with it: one `stage auth` per request in each receiver's traces.
      const authSpans = (spans: ReceivedSpan[], ids: string[]) => {
        const traces = new Set(spans.filter((s) => s.kind === 2 && ids.includes(s.attributes['tollgate.request_id'] as string)).map((s) => s.traceId));
        return spans.filter((s) => s.name === 'stage auth' && traces.has(s.traceId)).length;
      };
      expect(authSpans(ownSpans, mine)).toBe(mine.length);
      expect(authSpans(otherSpans, theirs)).toBe(theirs.length);
      // The provider joined each request's own trace: the other gateway's tracer did not take over its traceparent.
      const sentTraces = new Set(upstream.calls.map((call) => String(call.headers.traceparent).split('-')[1]));
      for (const spans of [ownSpans, otherSpans]) {
        for (const span of spans.filter((s) => s.kind === 2 && asked.includes(s.attributes['tollgate.request_id'] as string))) expect(sentTraces.has(span.traceId)).toBe(true);
      }
    } finally {
      await other.stop();
      await otherReceiver.close();
    }
  });

  it("keeps a secret out of every span when the provider's error quotes one the client pasted into its model name", async () => {
    const before = new Set(receiver.spans.map((s) => s.traceId));
    const secret = 'sk-proj-Zq7vW3xK9mN2pL5tR8yB4cD6fG1hJ0aS';
    upstream.enqueue({ kind: 'error', status: 404, code: 'model_not_found', message: `The model \`${secret}\` does not exist or you do not have access to it.` });
    await expect(tg.client.chat.completions.create({ model: `openai/${secret}`, messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 404 });
    const spans = await receiver.waitFor((all) => all.some((s) => s.kind === 2 && !before.has(s.traceId)));
    const trace = spans.filter((s) => s.traceId === spans.find((root) => root.kind === 2 && !before.has(root.traceId))?.traceId);
    // The stages the failure went out through still say why, without the secret.
    expect(trace.filter((s) => s.name.startsWith('stage ')).map((s) => s.status.message)).toContain('The model `[REDACTED]` does not exist or you do not have access to it.');
    const exported = JSON.stringify(trace, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
    expect(exported).not.toContain(secret.slice(8));
  });

  it('marks the server span of a request that failed as 5xx an error, with its message', async () => {
    const before = new Set(receiver.spans.map((s) => s.traceId));
    await expect(tg.client.chat.completions.create({ model: 'unreachable/m', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status: 502 });
    const spans = await receiver.waitFor((all) => all.some((s) => s.kind === 2 && !before.has(s.traceId)));
    const root = spans.find((s) => s.kind === 2 && !before.has(s.traceId)) as ReceivedSpan;
    expect(root.attributes['http.response.status_code']).toBe(502);
    expect(root.status.code).toBe(2);
    expect(root.status.message).toBeTruthy();
  });

  it('ends the spans of a stream the client abandoned, its stages marked cancelled', async () => {
    const before = new Set(receiver.spans.map((s) => s.traceId));
    upstream.enqueue({ kind: 'stall-after', chunks: 2 });
    const controller = new AbortController();
    const stream = await tg.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }], stream: true }, { signal: controller.signal });
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta?.content) break;
    }
    controller.abort();
    const spans = await receiver.waitFor((all) => all.some((s) => s.kind === 2 && !before.has(s.traceId)));
    const root = spans.find((s) => s.kind === 2 && !before.has(s.traceId)) as ReceivedSpan;
    expect(root.attributes['http.response.status_code']).toBe(499);
    expect(root.attributes['tollgate.cancelled']).toBe(true);
    const stages = spans.filter((s) => s.traceId === root.traceId && s.name.startsWith('stage '));
    expect(stages.map((s) => s.name)).toContain('stage call');
    for (const span of stages) {
      expect(span.attributes['tollgate.stage.outcome']).toBe('cancelled');
      expect(span.endTimeUnixNano <= root.endTimeUnixNano + 1_000_000n).toBe(true);
    }
    // The upstream attempt, cut off with the request (whether it ended before the request's span or after it), is
    // exported too, under the call stage.
    const withAttempt = await receiver.waitFor((all) => all.some((s) => s.traceId === root.traceId && s.kind === 3));
    const attempt = withAttempt.find((s) => s.traceId === root.traceId && s.kind === 3) as ReceivedSpan;
    expect(attempt.parentSpanId).toBe(stages.find((s) => s.name === 'stage call')?.spanId);
    expect(attempt.attributes['gen_ai.provider.name']).toBe('openai');
    expect(withAttempt.filter((s) => s.traceId === root.traceId && s.kind === 3)).toHaveLength(1);
    // The client left: the attempt did not fail (no error status or type, as on the request span), it was cancelled.
    expect(attempt.status).toEqual({});
    expect(attempt.attributes).not.toHaveProperty('error.type');
    expect(attempt.attributes['tollgate.cancelled']).toBe(true);
  });
});

describe('OTLP/HTTP JSON when asked for', () => {
  it('exports the same spans as JSON', async () => {
    const json = new OtlpReceiver();
    await json.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway(
      { providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${json.url}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    );
    try {
      await gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      const spans = await json.waitFor((all) => all.some((s) => s.kind === 2));
      expect(json.contentTypes[0]).toBe('application/json');
      const root = spans.find((s) => s.kind === 2) as ReceivedSpan;
      // The resource's attributes go out in JSON too: the service's name (OTEL_SERVICE_NAME unset: tollgate).
      expect(root.service).toBe('tollgate');
      expect(root.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.response.model': 'm', 'http.response.status_code': 200 });
      // The stages with nothing to do for this request (anonymous, no guardrail rule, the cache off) have no span.
      expect(spans.filter((s) => s.traceId === root.traceId).map((s) => s.name).sort()).toEqual(
        ['chat m', 'chat openai/m', 'stage auth', 'stage call', 'stage route', 'stage spend'].sort(),
      );
      // The children nest as in protobuf: stages in the onion's order, the attempt under the call stage.
      const byName = new Map(spans.filter((s) => s.traceId === root.traceId).map((s) => [s.name, s]));
      const nested = ['chat openai/m', 'stage auth', 'stage route', 'stage spend', 'stage call', 'chat m'];
      for (let i = 1; i < nested.length; i++) expect(byName.get(nested[i] as string)?.parentSpanId).toBe(byName.get(nested[i - 1] as string)?.spanId);
      for (const span of byName.values()) expect(span.spanId).toMatch(/^[0-9a-f]{16}$/);
      expect(up.calls.at(-1)?.headers.traceparent).toBe(`00-${root.traceId}-${byName.get('chat m')?.spanId}-01`);
    } finally {
      await gateway.stop();
      await up.close();
      await json.close();
    }
  });

  it('gzips every export when asked (OTEL_EXPORTER_OTLP_COMPRESSION or settings.tracing.compression), with the same spans', async () => {
    const receiver = new OtlpReceiver();
    await receiver.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway(
      { providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' },
    );
    try {
      await gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      const spans = await receiver.waitFor((all) => all.some((s) => s.kind === 2));
      expect(receiver.encodings[0]?.encoding).toBe('gzip');
      expect(receiver.contentTypes[0]).toBe('application/x-protobuf');
      const root = spans.find((s) => s.kind === 2) as ReceivedSpan;
      expect(root.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'http.response.status_code': 200 });
      expect(spans.filter((s) => s.traceId === root.traceId)).toHaveLength(6);
      // The API shows it, and turns it off: the next export goes uncompressed.
      expect((await jsonRequest(gateway.url, 'GET', '/api/config')).body.settings.tracing.compression).toBe('gzip');
      expect((await jsonRequest(gateway.url, 'PATCH', '/api/config', { settings: { tracing: { compression: 'none' } } })).status).toBe(200);
      await gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'y' }] });
      await receiver.waitFor((all) => all.filter((s) => s.kind === 2).length === 2);
      expect(receiver.encodings.at(-1)?.encoding).toBe('identity');
    } finally {
      await gateway.stop();
      await up.close();
      await receiver.close();
    }
  });

  it('refuses a protocol it does not speak, naming the variable', async () => {
    await expect(startGateway({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).rejects.toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL.*grpc/);
  });
});

describe('sampling', () => {
  it('at ratio 0 records nothing of its own but follows a sampled parent, and the provider always joins the trace', async () => {
    const sampled = new OtlpReceiver();
    await sampled.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway(
      { providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } }, settings: { tracing: { endpoint: `${sampled.url}/v1/traces`, sample_ratio: 0 } } },
    );
    try {
      // No incoming trace: not sampled; the upstream still gets a traceparent, flagged not sampled.
      await gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      expect(up.calls.at(-1)?.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
      // A sampled parent is followed whatever the ratio.
      const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01` } });
      await client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      const spans = await sampled.waitFor((all) => all.some((s) => s.kind === 2));
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([TRACE_ID]));
      expect(up.calls.at(-1)?.headers.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    } finally {
      await gateway.stop();
      await up.close();
      await sampled.close();
    }
  });
});

describe('OTEL_TRACES_SAMPLER without parentbased_', () => {
  it('decides alone, as the specification says: always_off records nothing even under a sampled parent, parentbased_always_off follows it', async () => {
    const sampled = new OtlpReceiver();
    await sampled.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const start = (sampler: string) =>
      startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } }, { OTEL_EXPORTER_OTLP_ENDPOINT: sampled.url, OTEL_TRACES_SAMPLER: sampler, OTEL_TRACES_SAMPLER_ARG: '0' });
    const ask = (gateway: RunningGateway, traceId: string) =>
      new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { traceparent: `00-${traceId}-${CLIENT_SPAN}-01` } }).chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
    const off = await start('always_off');
    const ratio = await start('traceidratio');
    const following = await start('parentbased_always_off');
    try {
      const [offTrace, ratioTrace, followedTrace] = ['1'.repeat(32), '2'.repeat(32), '3'.repeat(32)];
      await ask(off, offTrace);
      // Not recorded: the provider still joins the client's trace, as not sampled.
      expect(up.calls.at(-1)?.headers.traceparent).toMatch(new RegExp(`^00-${offTrace}-[0-9a-f]{16}-00$`));
      await ask(ratio, ratioTrace);
      expect(up.calls.at(-1)?.headers.traceparent).toMatch(new RegExp(`^00-${ratioTrace}-[0-9a-f]{16}-00$`));
      await ask(following, followedTrace);
      expect(up.calls.at(-1)?.headers.traceparent).toMatch(new RegExp(`^00-${followedTrace}-[0-9a-f]{16}-01$`));
      await sampled.waitFor((all) => all.some((s) => s.traceId === followedTrace && s.kind === 2));
      // The exports of the three gateways have all gone out by now (each flushes within a second).
      await new Promise((resolve) => setTimeout(resolve, 1_200));
      expect(new Set(sampled.spans.map((s) => s.traceId))).toEqual(new Set([followedTrace]));
    } finally {
      await Promise.all([off.stop(), ratio.stop(), following.stop()]);
      await up.close();
      await sampled.close();
    }
  });
});

describe('live configuration', () => {
  it('exports the spans of requests that ended just before the gateway stops or its tracing settings change', async () => {
    // A request's spans are encoded with others' a little after it ends: a stop, or new settings, must not lose them.
    const first = new OtlpReceiver();
    const second = new OtlpReceiver();
    await first.start();
    await second.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway(
      { providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${first.url}/v1/traces` },
    );
    const ask = (model: string) => gateway.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] });
    try {
      await ask('openai/before-the-change');
      const patched = await fetch(`${gateway.url}/api/config`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/merge-patch+json' },
        body: JSON.stringify({ settings: { tracing: { endpoint: `${second.url}/v1/traces` } } }),
      });
      expect(patched.status).toBe(200);
      await ask('openai/before-the-stop');
      await gateway.stop();
      // Each request's spans went to the collector of the settings it ran under, every one of its spans.
      const names = (receiver: OtlpReceiver) => receiver.spans.map((span) => span.name).sort();
      expect(names(first)).toEqual(['chat before-the-change', 'chat openai/before-the-change', 'stage auth', 'stage call', 'stage route', 'stage spend']);
      expect(names(second)).toEqual(['chat before-the-stop', 'chat openai/before-the-stop', 'stage auth', 'stage call', 'stage route', 'stage spend']);
    } finally {
      await gateway.stop();
      await up.close();
      await first.close();
      await second.close();
    }
  });

  it('turns off through the API with enabled: false an endpoint the environment names, and back on when it is removed', async () => {
    const live = new OtlpReceiver();
    await live.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } }, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${live.url}/v1/traces` });
    const patch = (body: unknown) =>
      fetch(`${gateway.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify(body) });
    const ask = (model: string) => gateway.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] });
    const running = async () => ((await (await fetch(`${gateway.url}/api/config`)).json()) as { settings: { tracing: { endpoint: string | null } } }).settings.tracing.endpoint;
    try {
      await ask('openai/traced');
      await live.waitFor((all) => all.some((s) => s.name === 'chat openai/traced'));
      expect((await patch({ settings: { tracing: { enabled: false } } })).status).toBe(200);
      expect(await running()).toBeNull();
      await ask('openai/untraced');
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      expect(live.spans.some((s) => s.name.endsWith('untraced'))).toBe(false);
      // Off, the gateway starts no trace of its own for the provider to join.
      expect(up.calls.at(-1)?.headers.traceparent).toBeUndefined();
      expect((await patch({ settings: { tracing: { enabled: null } } })).status).toBe(200);
      expect(await running()).not.toBeNull();
      await ask('openai/traced-again');
      await live.waitFor((all) => all.some((s) => s.name === 'chat openai/traced-again'));
    } finally {
      await gateway.stop();
      await up.close();
      await live.close();
    }
  });

  it('starts and stops exporting when settings.tracing changes, without a restart', async () => {
    const live = new OtlpReceiver();
    await live.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } });
    const patch = (body: unknown) =>
      fetch(`${gateway.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify(body) });
    const ask = () => gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
    try {
      await ask();
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      expect(live.spans).toEqual([]);
      expect((await patch({ settings: { tracing: { endpoint: `${live.url}/v1/traces`, service_name: 'patched' } } })).status).toBe(200);
      await ask();
      const spans = await live.waitFor((all) => all.some((s) => s.kind === 2));
      expect(spans.find((s) => s.kind === 2)?.service).toBe('patched');
      expect((await patch({ settings: { tracing: null } })).status).toBe(200);
      const seen = live.spans.length;
      await ask();
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      expect(live.spans.length).toBe(seen);
    } finally {
      await gateway.stop();
      await up.close();
      await live.close();
    }
  });
});

describe('a collector that is down', () => {
  it('costs requests nothing: they answer while exports fail', async () => {
    // A port nothing listens on (a server closed just now).
    const gone = new OtlpReceiver();
    await gone.start();
    await gone.close();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const lonely = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } }, settings: { tracing: { endpoint: `${gone.url}/v1/traces` } } });
    try {
      const started = performance.now();
      for (let i = 0; i < 20; i++) await lonely.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      await lonely.stop();
      await up.close();
    }
  });
});

describe('a collector that takes the export and never answers', () => {
  it('does not hold the gateway’s stop for the export’s timeout: the export is given up after the flush wait', async () => {
    // Accepts connections and reads what comes, never answering (a collector hung, or a black-holed route).
    const sockets = new Set<Socket>();
    const hung = createServer((socket) => {
      sockets.add(socket);
      socket.resume();
    });
    await new Promise<void>((done) => hung.listen(0, '127.0.0.1', done));
    const port = (hung.address() as AddressInfo).port;
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const traced = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } }, settings: { tracing: { endpoint: `http://127.0.0.1:${port}/v1/traces` } } });
    try {
      await traced.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      // A batch goes out a second after its first span: wait until the collector holds the export open.
      const deadline = Date.now() + 5_000;
      while (sockets.size === 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 50));
      expect(sockets.size).toBeGreaterThan(0);
      const stopping = performance.now();
      await traced.stop();
      // The flush waits 2 s; the export's own timeout is 10 s, which the stop used to wait out.
      expect(performance.now() - stopping).toBeLessThan(5_000);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => hung.close(done));
      await up.close();
    }
  }, 20_000);
});

describe('without an endpoint', () => {
  it('passes the client traceparent through to the provider unchanged', async () => {
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const plain = await startGateway({ providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } } });
    try {
      const parent = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;
      const client = new OpenAI({ baseURL: `${plain.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { traceparent: parent, tracestate: 'vendor=1' } });
      await client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: 'x' }] });
      expect(up.calls.at(-1)?.headers).toMatchObject({ traceparent: parent, tracestate: 'vendor=1' });
    } finally {
      await plain.stop();
      await up.close();
    }
  });
});

describe('an answer from the response cache', () => {
  it('says so in tollgate.cache and reports no model tokens, whole and streamed', async () => {
    const cached = new OtlpReceiver();
    await cached.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway(
      { providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } }, cache: { mode: 'on', scope: 'global', semantic: { enabled: false } } },
      { OTEL_EXPORTER_OTLP_ENDPOINT: cached.url },
    );
    // An answer is stored just after it was sent: the second request waits for it.
    const stored = new Set<string>();
    gateway.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
    try {
      const ids: Array<[string, string | null]> = [];
      for (const stream of [false, true]) {
        for (let i = 0; i < 2; i++) {
          const { response, data } = await gateway.client.chat.completions.create({ model: 'openai/m', messages: [{ role: 'user', content: `same question ${stream}` }], stream }).withResponse();
          if (stream) for await (const _ of data as AsyncIterable<unknown>) void _;
          const id = response.headers.get('x-request-id') as string;
          ids.push([id, response.headers.get('x-tollgate-cache')]);
          for (let wait = 0; i === 0 && !stored.has(id) && wait < 100; wait++) await new Promise((resolve) => setTimeout(resolve, 20));
        }
      }
      expect(ids.map(([, cache]) => cache)).toEqual(['miss', 'hit-exact', 'miss', 'hit-exact']);
      const spans = await cached.waitFor((all) => all.filter((s) => s.kind === 2).length >= 4);
      const root = (id: string): ReceivedSpan => spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === id) as ReceivedSpan;
      for (const [id, cache] of ids) {
        const span = root(id);
        expect(span.attributes['tollgate.cache']).toBe(cache);
        expect(span.attributes['gen_ai.provider.name']).toBe('openai');
        if (cache === 'miss') {
          expect(span.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
          expect(span.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
        } else {
          // No model was called: the stored answer's tokens were used (and charged) when it was bought.
          expect(span.attributes).not.toHaveProperty('gen_ai.usage.input_tokens');
          expect(span.attributes).not.toHaveProperty('gen_ai.usage.output_tokens');
          expect(span.attributes['tollgate.attempts']).toBe(0);
          expect(spans.filter((s) => s.traceId === span.traceId && s.kind === 3)).toEqual([]);
        }
      }
    } finally {
      await gateway.stop();
      await up.close();
      await cached.close();
    }
  });
});

describe('gen_ai.response.model', () => {
  it("is the model the provider's answer names (a dated snapshot), whole and streamed, while the client sees the name it asked for", async () => {
    const named = new OtlpReceiver();
    await named.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gemini = await startGeminiUpstream({ apiKey: 'gk' });
    const gateway = await startGateway(
      { providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' }, gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gk' } } },
      { OTEL_EXPORTER_OTLP_ENDPOINT: named.url },
    );
    const snapshot = 'gpt-4o-2024-08-06';
    const whole = { id: 'chatcmpl-1', object: 'chat.completion', created: 1, model: snapshot, choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } };
    const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id: 'chatcmpl-2', object: 'chat.completion.chunk', created: 1, model: snapshot, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    try {
      up.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
      const answer = await gateway.client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'x' }] });
      expect(answer.model).toBe('openai/gpt-4o');
      up.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body: `${chunk({ role: 'assistant', content: 'hi' }, null)}${chunk({}, 'stop')}data: [DONE]\n\n` });
      const stream = await gateway.client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'x' }], stream: true });
      for await (const part of stream) expect(part.model).toBe('openai/gpt-4o');
      // Gemini's vectors name no model: the one asked for, not the client's name for it.
      await gateway.client.embeddings.create({ model: 'gemini/gemini-embedding-001', input: 'x' });
      const spans = await named.waitFor((all) => all.filter((s) => s.kind === 2).length >= 3);
      const roots = spans.filter((s) => s.kind === 2);
      expect(roots.map((s) => [s.attributes['tollgate.stream'], s.attributes['gen_ai.request.model'], s.attributes['gen_ai.response.model']])).toEqual([
        [false, 'openai/gpt-4o', snapshot],
        [true, 'openai/gpt-4o', snapshot],
        [false, 'gemini/gemini-embedding-001', 'gemini-embedding-001'],
      ]);
    } finally {
      await gateway.stop();
      await up.close();
      await gemini.close();
      await named.close();
    }
  });
});

describe('stage spans', () => {
  it('come from the stages that had something to do: a key, a guardrail rule and the cache each add theirs, and a listed plugin only where listed', async () => {
    const traces = new OtlpReceiver();
    await traces.start();
    const up = await startOpenAIUpstream({ apiKey: 'sk-a', chunkDelayMs: 0 });
    const gateway = await startGateway(
      {
        providers: { openai: { base_url: `${up.url}/v1`, api_key: 'sk-a' } },
        guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'block', applies_to: 'input' }] },
        plugins: [
          { name: 'team-system-prompt', path: resolve(import.meta.dirname, '../../plugins/examples/team-system-prompt.ts'), options: { default: 'Be brief.' }, apply: 'listed', placement: { after: 'route' } },
        ],
        routes: {
          cached: { targets: [{ model: 'openai/m' }], cache: { mode: 'on', semantic: { enabled: false } }, plugins: ['team-system-prompt'] },
          plain: { targets: [{ model: 'openai/m' }] },
        },
      },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${traces.url}/v1/traces` },
    );
    let asked = 0;
    const stagesOf = async (client: OpenAI, model: string): Promise<string[]> => {
      // A new question each time (no cache hit); short numbers, which the card rule does not take for a card number.
      const raw = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `question ${++asked}` }] }).withResponse();
      const requestId = raw.response.headers.get('x-request-id');
      const spans = await traces.waitFor((all) => all.some((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId));
      const root = spans.find((s) => s.kind === 2 && s.attributes['tollgate.request_id'] === requestId) as ReceivedSpan;
      return spans.filter((s) => s.traceId === root.traceId && s.name.startsWith('stage ')).map((s) => s.name.slice('stage '.length));
    };
    try {
      const anonymous = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey: 'x', maxRetries: 0 });
      // The guardrail rule applies to every request; anonymous, so no limits; the plain route has no cache and does not list the plugin.
      expect((await stagesOf(anonymous, 'plain')).sort()).toEqual(['auth', 'call', 'guardrails', 'route', 'spend']);
      // The cached route turns the cache and the listed plugin on.
      expect((await stagesOf(anonymous, 'cached')).sort()).toEqual(['auth', 'cache', 'call', 'guardrails', 'route', 'spend', 'team-system-prompt']);
      // A virtual key brings its limits: the rate-limit stage works for it.
      const { createKey, clientFor } = gatewayApi(() => gateway.url);
      const { key } = await createKey({ name: 'traced', rate_limit: 600 });
      expect((await stagesOf(clientFor(key), 'plain')).sort()).toEqual(['auth', 'call', 'guardrails', 'rate-limit', 'route', 'spend']);
    } finally {
      await gateway.stop();
      await up.close();
      await traces.close();
    }
  });
});
