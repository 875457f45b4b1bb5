import { randomFillSync } from 'node:crypto';
import type { SpanKind} from '@opentelemetry/api';
import { SpanStatusCode, TraceFlags, type Attributes, type HrTime, type SpanContext, type SpanStatus } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** Random bytes for span ids, drawn from the OS in blocks (one syscall per 1,024 ids instead of one per id). */
const pool = Buffer.alloc(8 * 1024);
let offset = pool.length;

export function newSpanId(): string {
  if (offset + 8 > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = pool.toString('hex', offset, offset + 8);
  offset += 8;
  // The all-zero id is invalid in W3C trace context; it has a 2^-64 chance, and one more draw fixes it.
  return id === '0000000000000000' ? newSpanId() : id;
}

/** Wall-clock HrTime of a `performance.now()` reading. */
export function hrTime(performanceMs: number): HrTime {
  const wall = performance.timeOrigin + performanceMs;
  const seconds = Math.floor(wall / 1000);
  return [seconds, Math.round((wall - seconds * 1000) * 1e6)];
}

const UNSET: SpanStatus = { code: SpanStatusCode.UNSET };
const NONE: never[] = [];

/**
 * A finished child span (a stage, an upstream attempt) as a plain record the batch processor and exporter read:
 * the request's span is the SDK's, and its children reuse its trace, resource and scope. Building them directly
 * costs a fraction of the SDK's span objects, which matters at 100% sampling with seven spans per request.
 */
export class LightSpan implements ReadableSpan {
  readonly links = NONE;
  readonly events = NONE;
  readonly ended = true;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  readonly parentSpanContext: SpanContext;
  status: SpanStatus = UNSET;
  /** `performance.now()` at the end (the start is `startedAt`); the exporter reads both directly. */
  endedAt: number;
  private readonly context: SpanContext;

  constructor(
    readonly name: string,
    readonly kind: SpanKind,
    parent: SpanContext,
    readonly resource: ReadableSpan['resource'],
    readonly instrumentationScope: ReadableSpan['instrumentationScope'],
    readonly attributes: Attributes,
    readonly startedAt: number,
  ) {
    this.parentSpanContext = parent;
    this.context = { traceId: parent.traceId, spanId: newSpanId(), traceFlags: TraceFlags.SAMPLED, ...(parent.traceState ? { traceState: parent.traceState } : {}) };
    this.endedAt = startedAt;
  }

  // HrTime only for readers of the ReadableSpan interface; tollgate's encoder uses the millisecond readings.
  get startTime(): HrTime {
    return hrTime(this.startedAt);
  }

  get endTime(): HrTime {
    return hrTime(this.endedAt);
  }

  spanContext(): SpanContext {
    return this.context;
  }

  get duration(): HrTime {
    const nanos = (this.endTime[0] - this.startTime[0]) * 1e9 + (this.endTime[1] - this.startTime[1]);
    return [Math.floor(nanos / 1e9), nanos % 1e9];
  }

  /** `traceparent` naming this span as the parent (sampled). */
  traceparent(): string {
    return `00-${this.context.traceId}-${this.context.spanId}-01`;
  }

  end(endedAt: number): void {
    this.endedAt = endedAt;
  }

  fail(message: string): void {
    this.status = { code: SpanStatusCode.ERROR, message };
  }
}
