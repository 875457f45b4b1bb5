import type { Attributes, AttributeValue, HrTime } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/**
 * OTLP/HTTP JSON (the protobuf JSON mapping of ExportTraceServiceRequest), written straight from the SDK's
 * finished spans into one string. The OpenTelemetry transformer builds an object tree per span and then
 * stringifies it; at 100% sampling that cost about 20 µs per request of seven spans here, most of the tracing
 * budget, so the encoding is done in one pass instead. Output is what the OTLP spec defines: hex ids, nanosecond
 * times as decimal strings, span kinds and status codes as OTLP numbers, typed attribute values.
 */

/** OTLP's SpanKind is the API's plus one (0 is UNSPECIFIED in OTLP). */
function otlpKind(kind: number): number {
  return kind + 1;
}

function nanos(time: HrTime): string {
  const [seconds, fraction] = time;
  return seconds === 0 ? String(fraction) : `${seconds}${String(fraction).padStart(9, '0')}`;
}

function anyValue(value: AttributeValue): string {
  switch (typeof value) {
    case 'string':
      return `{"stringValue":${JSON.stringify(value)}}`;
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

export function attributesJson(attributes: Attributes): string {
  let out = '';
  for (const key in attributes) {
    const value = attributes[key];
    if (value === undefined || value === null) continue;
    out += `${out ? ',' : ''}{"key":${JSON.stringify(key)},"value":${anyValue(value)}}`;
  }
  return `[${out}]`;
}

function spanJson(span: ReadableSpan): string {
  const context = span.spanContext();
  const parent = span.parentSpanContext?.spanId;
  let json = `{"traceId":"${context.traceId}","spanId":"${context.spanId}"`;
  if (parent) json += `,"parentSpanId":"${parent}"`;
  if (context.traceState) json += `,"traceState":${JSON.stringify(context.traceState.serialize())}`;
  json += `,"name":${JSON.stringify(span.name)},"kind":${otlpKind(span.kind)},"startTimeUnixNano":"${nanos(span.startTime)}","endTimeUnixNano":"${nanos(span.endTime)}"`;
  json += `,"attributes":${attributesJson(span.attributes)}`;
  if (span.droppedAttributesCount) json += `,"droppedAttributesCount":${span.droppedAttributesCount}`;
  if (span.events.length > 0) {
    json += `,"events":[${span.events.map((event) => `{"timeUnixNano":"${nanos(event.time)}","name":${JSON.stringify(event.name)},"attributes":${attributesJson(event.attributes ?? {})}}`).join(',')}]`;
  }
  const status = span.status;
  json += status.code === 0 ? ',"status":{}' : `,"status":{"code":${status.code}${status.message ? `,"message":${JSON.stringify(status.message)}` : ''}}`;
  return `${json}}`;
}

/**
 * The export body for a batch: spans grouped by resource and instrumentation scope (one of each for tollgate's
 * own spans, but grouped properly whatever the batch holds).
 */
export function exportRequestJson(spans: readonly ReadableSpan[]): string {
  const resources = new Map<ReadableSpan['resource'], Map<string, { scope: ReadableSpan['instrumentationScope']; spans: string[] }>>();
  for (const span of spans) {
    let scopes = resources.get(span.resource);
    if (!scopes) resources.set(span.resource, (scopes = new Map()));
    const scopeKey = `${span.instrumentationScope.name}\0${span.instrumentationScope.version ?? ''}`;
    let scope = scopes.get(scopeKey);
    if (!scope) scopes.set(scopeKey, (scope = { scope: span.instrumentationScope, spans: [] }));
    scope.spans.push(spanJson(span));
  }
  const resourceSpans: string[] = [];
  for (const [resource, scopes] of resources) {
    const scopeSpans = [...scopes.values()].map(
      ({ scope, spans: encoded }) =>
        `{"scope":{"name":${JSON.stringify(scope.name)}${scope.version ? `,"version":${JSON.stringify(scope.version)}` : ''}},"spans":[${encoded.join(',')}]}`,
    );
    resourceSpans.push(`{"resource":{"attributes":${attributesJson(resource.attributes)}},"scopeSpans":[${scopeSpans.join(',')}]}`);
  }
  return `{"resourceSpans":[${resourceSpans.join(',')}]}`;
}
