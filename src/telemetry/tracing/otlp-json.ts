import type { AttributeValue } from '@opentelemetry/api';
import type { SpanBatch, SpanSource } from './span-batch.js';
import { DOUBLE_ATTRIBUTES, spanIdHex, spanName, traceIdHex, type AttributeList, type SpanRecord } from './span-record.js';

/**
 * OTLP/HTTP JSON (the protobuf JSON mapping of ExportTraceServiceRequest), written straight from the finished
 * spans into one string. The OpenTelemetry transformer builds an object tree per span and then
 * stringifies it; at 100% sampling that cost about 20 µs per request of seven spans here, most of the tracing
 * budget, so the encoding is done in one pass instead. Output is what the OTLP spec defines: hex ids, nanosecond
 * times as decimal strings, span kinds and status codes as OTLP numbers, typed attribute values.
 */

/** OTLP's SpanKind is the API's plus one (0 is UNSPECIFIED in OTLP). */
function otlpKind(kind: number): number {
  return kind + 1;
}

/** Unix nanoseconds of a `performance.now()` reading, as OTLP's decimal string (microsecond precision). */
function nanosOf(performanceMs: number): string {
  const micros = Math.round((performance.timeOrigin + performanceMs) * 1000);
  return `${micros}000`;
}

/** Strings that need no escaping in JSON (the common case: names, ids, paths) are written without JSON.stringify. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function jsonString(value: string): string {
  return value.length < 200 && PLAIN.test(value) ? `"${value}"` : JSON.stringify(value);
}

/** `{"key":"<name>","value":` per attribute name, built once: the names repeat on every span. */
const keyPrefixes = new Map<string, string>();

function keyPrefix(key: string): string {
  let prefix = keyPrefixes.get(key);
  if (prefix === undefined) {
    prefix = `{"key":${JSON.stringify(key)},"value":`;
    // Attribute names come from tollgate's code, not from clients; the bound is a safeguard.
    if (keyPrefixes.size < 1_000) keyPrefixes.set(key, prefix);
  }
  return prefix;
}

function anyValue(value: AttributeValue): string {
  switch (typeof value) {
    case 'string':
      return `{"stringValue":${jsonString(value)}}`;
    case 'boolean':
      return `{"boolValue":${value}}`;
    case 'number':
      return Number.isInteger(value) ? `{"intValue":"${value}"}` : `{"doubleValue":${Number.isFinite(value) ? value : 0}}`;
    default: {
      const values = (value as ReadonlyArray<string | number | boolean | null | undefined>).filter((item) => item !== null && item !== undefined) as Array<string | number | boolean>;
      return `{"arrayValue":{"values":[${values.map((item) => anyValue(item)).join(',')}]}}`;
    }
  }
}

function attributeListJson(list: AttributeList): string {
  let out = '';
  for (let i = 0; i < list.length; i += 2) {
    const value = list[i + 1];
    if (value === undefined || value === null) continue;
    const key = list[i] as string;
    const encoded = typeof value === 'number' && DOUBLE_ATTRIBUTES.has(key) ? `{"doubleValue":${Number.isFinite(value) ? value : 0}}` : anyValue(value);
    out += `${out ? ',' : ''}${keyPrefix(key)}${encoded}}`;
  }
  return `[${out}]`;
}

function spanJson(c: SpanRecord): string {
  let json = `{"traceId":"${traceIdHex(c.traceId)}","spanId":"${spanIdHex(c.idHigh, c.idLow)}"`;
  if (c.parentHigh !== 0 || c.parentLow !== 0) json += `,"parentSpanId":"${spanIdHex(c.parentHigh, c.parentLow)}"`;
  if (c.traceState) json += `,"traceState":${JSON.stringify(c.traceState)}`;
  json += `,"name":${jsonString(spanName(c))},"kind":${otlpKind(c.kind)},"startTimeUnixNano":"${nanosOf(c.startedAt)}","endTimeUnixNano":"${nanosOf(c.endedAt)}"`;
  json += `,"attributes":${c.attributes ? attributeListJson(c.attributes) : '[]'}`;
  json += c.error === null ? ',"status":{}' : `,"status":{"code":2${c.error ? `,"message":${JSON.stringify(c.error.slice(0, 1_024))}` : ''}}`;
  return `${json}}`;
}

/** A batch being built as OTLP JSON: each span is encoded as it is added (see ProtoSpanBatch). */
export class JsonSpanBatch implements SpanBatch {
  readonly contentType = 'application/json';
  /** The batch's spans, already encoded, comma-separated. */
  private spans = '';
  count = 0;

  constructor(private readonly source: SpanSource) {}

  add(span: SpanRecord): void {
    const json = spanJson(span);
    this.spans += this.count === 0 ? json : `,${json}`;
    this.count++;
  }

  take(): string {
    const { resource, scope } = this.source;
    const json =
      `{"resourceSpans":[{"resource":{"attributes":${attributeListJson(resource)}},"scopeSpans":[` +
      `{"scope":{"name":${JSON.stringify(scope.name)}${scope.version ? `,"version":${JSON.stringify(scope.version)}` : ''}},"spans":[${this.spans}]}]}]}`;
    this.spans = '';
    this.count = 0;
    return json;
  }
}
