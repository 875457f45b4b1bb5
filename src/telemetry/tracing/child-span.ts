import { randomFillSync } from 'node:crypto';
import type { Attributes, HrTime, SpanKind } from '@opentelemetry/api';

/** Random 32-bit words for span ids, drawn from the OS in blocks (one syscall per 1,024 span ids). */
const words = new Uint32Array(2 * 1024);
let next = words.length;

/** One random 32-bit word (half a span id). */
export function randomWord(): number {
  if (next === words.length) {
    randomFillSync(words);
    next = 0;
  }
  return words[next++] as number;
}

/** A span id as two words: `high` is its first four bytes; the all-zero id (invalid in W3C trace context) is redrawn. */
export function newSpanId(into: { idHigh: number; idLow: number }): void {
  do {
    into.idHigh = randomWord();
    into.idLow = randomWord();
  } while (into.idHigh === 0 && into.idLow === 0);
}

/** The 16 hex digits of a span id given as two words. */
export function spanIdHex(high: number, low: number): string {
  return high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
}

/** Wall-clock HrTime of a `performance.now()` reading. */
export function hrTime(performanceMs: number): HrTime {
  const wall = performance.timeOrigin + performanceMs;
  const seconds = Math.floor(wall / 1000);
  return [seconds, Math.round((wall - seconds * 1000) * 1e6)];
}

/**
 * A finished child of a request span (a stage, an upstream attempt), as the encoders read it. The request span
 * is the SDK's; its children are numbers and strings the tracer keeps in the request's own arrays, handed to the
 * batch in one reused record and encoded at once, so a traced request allocates no object per stage span (at
 * 100% sampling, seven spans a request, the span objects and their garbage were most of tracing's cost).
 */
export interface ChildSpan {
  /** The request's trace id, 32 hex digits. */
  traceId: string;
  /** The request's serialized W3C tracestate, if it has one. */
  traceState: string | undefined;
  idHigh: number;
  idLow: number;
  parentHigh: number;
  parentLow: number;
  name: string;
  kind: SpanKind;
  /** `performance.now()` readings. */
  startedAt: number;
  endedAt: number;
  attributes: Attributes | null;
  /** Set when the span failed: its status is ERROR with this message. */
  error: string | null;
}

/** A span id's first and second words from its 16 hex digits. */
export function spanIdWords(hex: string): [number, number] {
  return [Number.parseInt(hex.slice(0, 8), 16), Number.parseInt(hex.slice(8, 16), 16)];
}
