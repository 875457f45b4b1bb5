import { randomFillSync } from 'node:crypto';
import type { AttributeValue, SpanKind } from '@opentelemetry/api';

/** Random 32-bit words for trace and span ids, drawn from the OS in blocks (one syscall per 1,024 span ids). */
const words = new Uint32Array(2 * 1024);
let next = words.length;

/** One random 32-bit word (half a span id, a quarter of a trace id). */
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

/** Scratch bytes for turning ids into hex in one native call. */
const scratch = Buffer.alloc(16);

/** The 16 hex digits of a span id given as two words. */
export function spanIdHex(high: number, low: number): string {
  scratch.writeUInt32BE(high >>> 0, 0);
  scratch.writeUInt32BE(low >>> 0, 4);
  return scratch.toString('hex', 0, 8);
}

/**
 * A trace id as its 32 hex digits (for `traceparent` and the sampler) and its four 32-bit words, first to last as
 * the hex reads (what the protobuf encoding writes into every span: no Buffer per trace).
 */
export interface TraceId {
  hex: string;
  w0: number;
  w1: number;
  w2: number;
  w3: number;
}

/** A new random trace id (never all zero). */
export function newTraceId(): TraceId {
  let w0: number;
  let w1: number;
  let w2: number;
  let w3: number;
  do {
    w0 = randomWord();
    w1 = randomWord();
    w2 = randomWord();
    w3 = randomWord();
  } while (w0 === 0 && w1 === 0 && w2 === 0 && w3 === 0);
  scratch.writeUInt32BE(w0, 0);
  scratch.writeUInt32BE(w1, 4);
  scratch.writeUInt32BE(w2, 8);
  scratch.writeUInt32BE(w3, 12);
  return { hex: scratch.toString('hex', 0, 16), w0, w1, w2, w3 };
}

/** A trace id given as 32 hex digits (a client's, from its `traceparent`, already validated as hex). */
export function traceIdOf(hex: string): TraceId {
  const [w0, w1] = spanIdWords(hex.slice(0, 16));
  const [w2, w3] = spanIdWords(hex.slice(16, 32));
  return { hex, w0, w1, w2, w3 };
}

/** A span id's first and second words from its 16 hex digits. */
export function spanIdWords(hex: string): [number, number] {
  return [Number.parseInt(hex.slice(0, 8), 16), Number.parseInt(hex.slice(8, 16), 16)];
}

/**
 * A finished span (a request, a stage, an upstream attempt), as the encoders read it. The tracer keeps a request's
 * spans as numbers and strings in the request's own record and arrays, and hands each finished one to the batch in
 * one reused record that is encoded at once: a traced request allocates no span object. (The SDK's span objects,
 * built, filled through setAttribute, ended through its processor and then encoded, were most of tracing's cost
 * at 100% sampling; the SDK's sampler, resource and propagator are still the ones used.)
 */
export interface SpanRecord {
  traceId: TraceId;
  /** The serialized W3C tracestate, if the trace has one. */
  traceState: string | undefined;
  idHigh: number;
  idLow: number;
  /** The parent's span id as two words; both 0 for a root span (no parent). */
  parentHigh: number;
  parentLow: number;
  name: string;
  kind: SpanKind;
  /** `performance.now()` readings. */
  startedAt: number;
  endedAt: number;
  attributes: AttributeList | null;
  /** Set when the span failed: its status is ERROR with this message (none when empty). */
  error: string | null;
}

/**
 * A span's attributes as a flat list, each name followed by its value (`[name, value, name, value, ...]`). The
 * tracer fills a request span's attributes in two goes (at the start and at the end): appending to one array costs a
 * fraction of adding a dozen properties to an object one by one (each a new hidden class) and walking them back.
 * A value that is `null` or `undefined` is left out of the export.
 */
export type AttributeList = Array<string | AttributeValue | null | undefined>;

/**
 * Attributes whose numbers are always exported as doubles: a cost or a latency that happens to be whole (a free
 * request's 0) would otherwise go out as an int on some spans and a double on others, and a backend then sees two
 * types for one attribute.
 */
export const DOUBLE_ATTRIBUTES: ReadonlySet<string> = new Set(['tollgate.cost_usd', 'tollgate.time_to_first_token_ms']);
