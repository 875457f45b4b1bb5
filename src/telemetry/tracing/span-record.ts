import { randomFillSync } from 'node:crypto';
import type { AttributeValue, SpanKind } from '@opentelemetry/api';

/**
 * Random 32-bit words for trace and span ids, drawn from the OS in blocks (one syscall per 1,024 span ids). Signed:
 * every int32 is a small integer to V8, held in a field or passed to a function without a heap number, where half
 * of all uint32 values would need one (the ids are only ever read bit by bit, so the sign changes nothing).
 */
const words = new Int32Array(2 * 1024);
let next = words.length;

/** One random 32-bit word, signed (half a span id, a quarter of a trace id). */
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

/** Scratch bytes for turning ids into hex in one native call (a trace id and a span id). */
const scratch = Buffer.alloc(24);

/** The 16 hex digits of a span id given as two words. */
export function spanIdHex(high: number, low: number): string {
  scratch.writeInt32BE(high | 0, 0);
  scratch.writeInt32BE(low | 0, 4);
  return scratch.toString('hex', 0, 8);
}

/**
 * A trace id as its four 32-bit words, first to last as the hex reads (what the protobuf encoding writes into every
 * span: no Buffer per trace), and its 32 hex digits once something asked for them (traceIdHex): the upstream's
 * `traceparent`, a ratio sampler, the JSON encoding.
 */
export interface TraceId {
  hex: string | null;
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
  return { hex: null, w0, w1, w2, w3 };
}

/** Writes a trace id's words into the scratch bytes from `at`. */
function traceIdBytes(id: TraceId, at: number): void {
  scratch.writeInt32BE(id.w0, at);
  scratch.writeInt32BE(id.w1, at + 4);
  scratch.writeInt32BE(id.w2, at + 8);
  scratch.writeInt32BE(id.w3, at + 12);
}

/** A trace id's 32 hex digits (made once per trace). */
export function traceIdHex(id: TraceId): string {
  if (id.hex === null) {
    traceIdBytes(id, 0);
    id.hex = scratch.toString('hex', 0, 16);
  }
  return id.hex;
}

/**
 * A W3C `traceparent` for the span given by its two words in the trace: the trace's and the span's hex digits from
 * one conversion when the trace's are not known yet (the common case: a traced request's first upstream attempt).
 */
export function traceparentOf(id: TraceId, high: number, low: number, sampled: boolean): string {
  const flags = sampled ? '-01' : '-00';
  if (id.hex !== null) return `00-${id.hex}-${spanIdHex(high, low)}${flags}`;
  traceIdBytes(id, 0);
  scratch.writeInt32BE(high | 0, 16);
  scratch.writeInt32BE(low | 0, 20);
  const digits = scratch.toString('hex', 0, 24);
  id.hex = digits.slice(0, 32);
  return `00-${id.hex}-${digits.slice(32)}${flags}`;
}

/** A trace id given as 32 hex digits (a client's, from its `traceparent`, already validated as hex). */
export function traceIdOf(hex: string): TraceId {
  const [w0, w1] = spanIdWords(hex.slice(0, 16));
  const [w2, w3] = spanIdWords(hex.slice(16, 32));
  return { hex, w0, w1, w2, w3 };
}

/** A span id's first and second words from its 16 hex digits (signed, as randomWord gives them). */
export function spanIdWords(hex: string): [number, number] {
  return [Number.parseInt(hex.slice(0, 8), 16) | 0, Number.parseInt(hex.slice(8, 16), 16) | 0];
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
  /**
   * The rest of the name after a space, when it has two parts (`chat gpt-4o-mini`: the operation, then the model), or
   * null. Kept apart so the encoder writes both parts straight into the batch: joined per request, the name was a new
   * string the encoder then had to flatten, twice a traced request.
   */
  nameTail: string | null;
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

/** A span's whole name: its first part, and its tail after a space when it has one. */
export function spanName(span: Pick<SpanRecord, 'name' | 'nameTail'>): string {
  return span.nameTail === null ? span.name : `${span.name} ${span.nameTail}`;
}

/**
 * Attributes whose numbers are always exported as doubles: a cost or a latency that happens to be whole (a free
 * request's 0) would otherwise go out as an int on some spans and a double on others, and a backend then sees two
 * types for one attribute.
 */
export const DOUBLE_ATTRIBUTES: ReadonlySet<string> = new Set(['tollgate.cost_usd', 'tollgate.time_to_first_token_ms']);
