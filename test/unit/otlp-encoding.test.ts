import { SpanKind } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { JsonSpanBatch } from '../../src/telemetry/tracing/otlp-json.js';
import { ProtoSpanBatch } from '../../src/telemetry/tracing/otlp-proto.js';
import { newTraceId, type AttributeList, type SpanRecord } from '../../src/telemetry/tracing/span-record.js';
import { decodeExport } from '../helpers/otlp-receiver.js';

const source = { resource: ['service.name', 'test', 'service.version', '1.0.0'], scope: { name: 'tollgate', version: '1.0.0' } };

/** The i-th span's attributes: some values repeat (kept encodings), some never do (a name given up on), some vary. */
function attributesOf(i: number): AttributeList {
  return [
    'gen_ai.operation.name', 'chat',
    'gen_ai.request.model', ['gpt-4o-mini', 'claude-sonnet-4', 'modèle-é'][i % 3],
    'tollgate.request_id', `req-${i}`,
    'tollgate.stream', i % 2 === 0,
    'http.response.status_code', [200, 429, 502][i % 3],
    'gen_ai.usage.input_tokens', i % 97,
    'tollgate.cost_usd', 0.000001 * (i + 1),
    'tollgate.negative', -(i + 1),
    'gen_ai.response.finish_reasons', i % 4 === 0 ? ['stop'] : ['length', 'stop'],
    'tollgate.key', i % 5 === 0 ? null : `key-${i % 7}`,
    'tollgate.note', i === 7 ? 'x'.repeat(300) : undefined,
  ];
}

function spanOf(i: number): SpanRecord {
  return {
    traceId: newTraceId(),
    traceState: undefined,
    idHigh: i + 1,
    idLow: 7,
    parentHigh: 0,
    parentLow: 0,
    // Names in two parts (an operation and a model, some not ASCII, one past 127 bytes) and in one.
    name: 'chat',
    nameTail: i % 4 === 3 ? null : i === 10 ? 'm'.repeat(130) : ['gpt-4o-mini', 'claude-sonnet-4', 'modèle-é'][i % 3] as string,
    kind: SpanKind.SERVER,
    startedAt: 1_000 + i,
    endedAt: 1_001 + i,
    attributes: attributesOf(i),
    error: null,
  };
}

describe('OTLP protobuf encoding', () => {
  it('writes every attribute as the JSON encoding does, whether its encoding was kept, reused or given up on', () => {
    // Enough spans for the request ids to fill the kept values and pass the misses after which a name is given up.
    const count = 1_200;
    const proto = new ProtoSpanBatch(source);
    const json = new JsonSpanBatch(source);
    for (let i = 0; i < count; i++) {
      const span = spanOf(i);
      proto.add(span);
      json.add(span);
    }
    const fromProto = decodeExport(proto.take(), proto.contentType);
    const fromJson = decodeExport(Buffer.from(json.take()), json.contentType);
    expect(fromProto).toHaveLength(count);
    expect(fromProto).toEqual(fromJson);
    expect(fromProto.slice(0, 4).map((span) => span.name)).toEqual(['chat gpt-4o-mini', 'chat claude-sonnet-4', 'chat modèle-é', 'chat']);
    expect(fromProto[10]?.name).toBe(`chat ${'m'.repeat(130)}`);
    // And the values are the ones given (spot checks across the phases).
    for (const i of [0, 1, 7, 63, 64, 65, 400, 1_199]) {
      const attributes = fromProto[i]?.attributes as Record<string, unknown>;
      expect(attributes['tollgate.request_id']).toBe(`req-${i}`);
      expect(attributes['gen_ai.request.model']).toBe(['gpt-4o-mini', 'claude-sonnet-4', 'modèle-é'][i % 3]);
      expect(attributes['tollgate.stream']).toBe(i % 2 === 0);
      expect(attributes['http.response.status_code']).toBe([200, 429, 502][i % 3]);
      expect(attributes['gen_ai.usage.input_tokens']).toBe(i % 97);
      expect(attributes['tollgate.negative']).toBe(-(i + 1));
      expect(attributes['tollgate.cost_usd']).toBeCloseTo(0.000001 * (i + 1), 12);
      expect(attributes['gen_ai.response.finish_reasons']).toEqual(i % 4 === 0 ? ['stop'] : ['length', 'stop']);
      expect(attributes['tollgate.key']).toBe(i % 5 === 0 ? undefined : `key-${i % 7}`);
      expect(attributes['tollgate.note']).toBe(i === 7 ? 'x'.repeat(300) : undefined);
    }
  });

  it('writes a cost and a time to first token as doubles even when they are whole', () => {
    const span = { ...spanOf(0), attributes: ['tollgate.cost_usd', 0, 'tollgate.time_to_first_token_ms', 12, 'gen_ai.usage.input_tokens', 3] };
    const json = new JsonSpanBatch(source);
    json.add(span);
    const text = Buffer.from(json.take()).toString('utf8');
    expect(text).toContain('{"key":"tollgate.cost_usd","value":{"doubleValue":0}}');
    expect(text).toContain('{"key":"tollgate.time_to_first_token_ms","value":{"doubleValue":12}}');
    expect(text).toContain('{"key":"gen_ai.usage.input_tokens","value":{"intValue":"3"}}');
    const proto = new ProtoSpanBatch(source);
    proto.add(span);
    const bytes = proto.take();
    // AnyValue.double_value is field 4, wire type 1 (tag 0x21): 0.0 as eight zero bytes, in the value field (2, with its two length bytes) after the key.
    const key = Buffer.from('tollgate.cost_usd');
    const at = Buffer.from(bytes).indexOf(key);
    expect(at).toBeGreaterThan(0);
    expect(Buffer.from(bytes).subarray(at + key.length, at + key.length + 13).toString('hex')).toMatch(/^12[0-9a-f]{4}210{16}/);
    expect(decodeExport(bytes, proto.contentType)[0]?.attributes).toMatchObject({ 'tollgate.cost_usd': 0, 'tollgate.time_to_first_token_ms': 12, 'gen_ai.usage.input_tokens': 3 });
  });

  it('starts each batch afresh and reuses kept encodings across batches', () => {
    const proto = new ProtoSpanBatch(source);
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) proto.add(spanOf(i));
      const spans = decodeExport(proto.take(), proto.contentType);
      expect(spans.map((span) => span.attributes['tollgate.request_id'])).toEqual(Array.from({ length: 10 }, (_, i) => `req-${i}`));
      expect(spans.every((span) => span.service === 'test')).toBe(true);
    }
  });

  it('reads a reused attribute list again when a slot is given another name, as the tracer does with its lists', () => {
    const proto = new ProtoSpanBatch(source);
    const list: AttributeList = ['gen_ai.operation.name', 'chat', 'error.type', 'upstream_error'];
    proto.add({ ...spanOf(0), attributes: list });
    list[2] = 'tollgate.cancelled';
    list[3] = true;
    proto.add({ ...spanOf(1), attributes: list });
    list[1] = null;
    proto.add({ ...spanOf(2), attributes: list });
    const spans = decodeExport(proto.take(), proto.contentType);
    expect(spans.map((span) => span.attributes)).toEqual([
      { 'gen_ai.operation.name': 'chat', 'error.type': 'upstream_error' },
      { 'gen_ai.operation.name': 'chat', 'tollgate.cancelled': true },
      { 'tollgate.cancelled': true },
    ]);
  });

  it('encodes a frozen attribute list', () => {
    const proto = new ProtoSpanBatch(source);
    proto.add({ ...spanOf(0), attributes: Object.freeze(['tollgate.stage.outcome', 'failed']) as unknown as AttributeList });
    expect(decodeExport(proto.take(), proto.contentType)[0]?.attributes).toEqual({ 'tollgate.stage.outcome': 'failed' });
  });

  it('leaves a body it handed out as it was while the next batch is written', () => {
    const proto = new ProtoSpanBatch(source);
    for (let i = 0; i < 5; i++) proto.add(spanOf(i));
    const first = proto.take();
    const copy = Buffer.from(first);
    for (let i = 5; i < 2_000; i++) proto.add(spanOf(i));
    const second = proto.take();
    expect(Buffer.compare(first, copy)).toBe(0);
    expect(decodeExport(first, proto.contentType).map((span) => span.attributes['tollgate.request_id'])).toEqual(['req-0', 'req-1', 'req-2', 'req-3', 'req-4']);
    expect(decodeExport(second, proto.contentType)).toHaveLength(1_995);
  });

  it('writes an attribute larger than the room kept for its length (16 finish reasons of 2,000 bytes) and the spans around it', () => {
    // An upstream names the finish reasons: 16 long ones made a value of 32 KB, past the two length bytes kept for it,
    // and the span's partial bytes made the whole batch (every request's spans in it) unreadable.
    const reasons = Array.from({ length: 16 }, (_, i) => `${i}`.padEnd(2_000, 'r'));
    const proto = new ProtoSpanBatch(source);
    const json = new JsonSpanBatch(source);
    const spans = [spanOf(0), { ...spanOf(1), attributes: ['gen_ai.response.finish_reasons', reasons, 'tollgate.key', 'key-1'] as AttributeList }, spanOf(2)];
    for (const span of spans) {
      proto.add(span);
      json.add(span);
    }
    const fromProto = decodeExport(proto.take(), proto.contentType);
    expect(fromProto).toHaveLength(3);
    expect(fromProto[1]?.attributes['gen_ai.response.finish_reasons']).toEqual(reasons);
    expect(fromProto[1]?.attributes['tollgate.key']).toBe('key-1');
    expect(fromProto).toEqual(decodeExport(Buffer.from(json.take()), json.contentType));
  });
});
