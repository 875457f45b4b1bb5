import { SpanKind, type AttributeValue } from '@opentelemetry/api';
import type { SpanBatch, SpanSource } from './span-batch.js';
import { DOUBLE_ATTRIBUTES, type AttributeList, type SpanRecord, type TraceId } from './span-record.js';

/**
 * OTLP/HTTP protobuf (ExportTraceServiceRequest, opentelemetry/proto/collector/trace/v1), the OTLP default,
 * written in one pass into one buffer. About a third of the JSON's bytes for tollgate's spans, and no string
 * building: ids go in as bytes, times as fixed64, strings through Buffer.write.
 *
 * Nested messages get their length written in a fixed number of bytes reserved before their content (a padded
 * varint, which every protobuf decoder reads like the minimal one), so nothing is measured twice or copied.
 */

/** Longest string value kept in an attribute or status message (a span is a summary, not a log). */
const MAX_STRING_BYTES = 4_096;

/** A 32-bit word's four bytes, most significant first, at `at`. */
function bigEndian(buf: Buffer, at: number, word: number): void {
  buf[at] = word >>> 24;
  buf[at + 1] = (word >>> 16) & 0xff;
  buf[at + 2] = (word >>> 8) & 0xff;
  buf[at + 3] = word & 0xff;
}

/** Copies an ASCII string's characters into `buf` from `at`; where they end, or -1 at the first non-ASCII one. */
function copyAscii(buf: Buffer, at: number, text: string): number {
  let end = at;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) return -1;
    buf[end++] = code;
  }
  return end;
}

class ProtoWriter {
  buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }

  varint(value: number): void {
    this.room(10);
    let v = value;
    while (v > 0x7f) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80;
      v = Math.floor(v / 128);
    }
    this.buf[this.pos++] = v;
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  /** A length-delimited field of 16 bytes: a trace id given as four 32-bit words, big-endian as its hex reads. */
  traceId(field: number, id: TraceId): void {
    this.room(18);
    const buf = this.buf;
    const at = this.pos;
    buf[at] = (field << 3) | 2;
    buf[at + 1] = 16;
    bigEndian(buf, at + 2, id.w0);
    bigEndian(buf, at + 6, id.w1);
    bigEndian(buf, at + 10, id.w2);
    bigEndian(buf, at + 14, id.w3);
    this.pos = at + 18;
  }

  /** A length-delimited field of 8 bytes: a span id given as two 32-bit words, big-endian as its hex reads. */
  words(field: number, high: number, low: number): void {
    this.room(10);
    const buf = this.buf;
    const at = this.pos;
    buf[at] = (field << 3) | 2;
    buf[at + 1] = 8;
    bigEndian(buf, at + 2, high);
    bigEndian(buf, at + 6, low);
    this.pos = at + 10;
  }

  string(field: number, value: string): void {
    // Short ASCII strings (names, ids, models) are copied in JS: cheaper than a native call each.
    if (value.length < 128) {
      this.room(value.length + 8);
      const mark = this.pos;
      this.tag(field, 2);
      this.buf[this.pos++] = value.length;
      const end = copyAscii(this.buf, this.pos, value);
      if (end !== -1) {
        this.pos = end;
        return;
      }
      this.pos = mark;
    }
    this.stringSlow(field, value);
  }

  /**
   * A string field of two parts joined by a space (a span's name: operation and model), written without joining
   * them first when both are short ASCII.
   */
  joined(field: number, head: string, tail: string): void {
    const length = head.length + 1 + tail.length;
    if (length < 128) {
      this.room(length + 8);
      const mark = this.pos;
      this.tag(field, 2);
      const buf = this.buf;
      buf[this.pos++] = length;
      let end = copyAscii(buf, this.pos, head);
      if (end !== -1) {
        buf[end++] = 0x20;
        end = copyAscii(buf, end, tail);
      }
      if (end !== -1) {
        this.pos = end;
        return;
      }
      this.pos = mark;
    }
    this.stringSlow(field, `${head} ${tail}`);
  }

  private stringSlow(field: number, value: string): void {
    let bytes = Buffer.byteLength(value, 'utf8');
    let text = value;
    if (bytes > MAX_STRING_BYTES) {
      text = Buffer.from(value, 'utf8').subarray(0, MAX_STRING_BYTES).toString('utf8').replace(/\uFFFD$/, '');
      bytes = Buffer.byteLength(text, 'utf8');
    }
    this.tag(field, 2);
    this.varint(bytes);
    this.room(bytes);
    this.pos += this.buf.write(text, this.pos, bytes, 'utf8');
  }

  /** fixed64 of a non-negative integer given as high and low 32-bit halves (little-endian, low first). */
  fixed64(field: number, high: number, low: number): void {
    this.room(9);
    const buf = this.buf;
    const at = this.pos;
    buf[at] = (field << 3) | 1;
    buf[at + 1] = low & 0xff;
    buf[at + 2] = (low >>> 8) & 0xff;
    buf[at + 3] = (low >>> 16) & 0xff;
    buf[at + 4] = low >>> 24;
    buf[at + 5] = high & 0xff;
    buf[at + 6] = (high >>> 8) & 0xff;
    buf[at + 7] = (high >>> 16) & 0xff;
    buf[at + 8] = high >>> 24;
    this.pos = at + 9;
  }

  double(field: number, value: number): void {
    this.tag(field, 1);
    this.room(8);
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /**
   * Raw bytes, already encoded (an attribute's name, a stage span's name and kind, the batch's spans). One `set` even
   * for a few bytes: measured cheaper than a copy loop at every length tried (bench/RESULTS.md, issue 16).
   */
  bytes(bytes: Uint8Array): void {
    this.room(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
  }

  /** Opens a nested message: reserves `width` bytes for its length; returns where its content starts. */
  open(field: number, width: number): number {
    this.tag(field, 2);
    this.room(width);
    this.pos += width;
    return this.pos;
  }

  /** Closes a nested message opened with `open`, writing its length as a varint padded to `width` bytes. */
  close(start: number, width: number): void {
    let length = this.pos - start;
    let at = start - width;
    if (width === 2 && length < 16_384) {
      // Most nested messages (attributes, values, statuses) are small: their two length bytes directly.
      this.buf[at] = (length & 0x7f) | 0x80;
      this.buf[at + 1] = length >>> 7;
      return;
    }
    if (width === 3 && length < 2_097_152) {
      // A span: three length bytes directly.
      this.buf[at] = (length & 0x7f) | 0x80;
      this.buf[at + 1] = ((length >>> 7) & 0x7f) | 0x80;
      this.buf[at + 2] = length >>> 14;
      return;
    }
    if (length >= 2 ** (7 * width)) {
      // Larger than the room kept for its length (an attribute holding many long strings: finish reasons an upstream
      // wrote): its content moves up to make room for more length bytes. The messages around it were opened before it,
      // so their lengths, measured at their close from their own starts, take the move in.
      let needed = width;
      while (length >= 2 ** (7 * needed)) needed++;
      const extra = needed - width;
      this.room(extra);
      this.buf.copyWithin(start + extra, start, this.pos);
      this.pos += extra;
      width = needed;
    }
    for (let i = 0; i < width - 1; i++) {
      this.buf[at++] = (length & 0x7f) | 0x80;
      length = Math.floor(length / 128);
    }
    this.buf[at] = length;
  }
}

/** A span's nested message lengths: small messages take 2 length bytes (up to 16 KiB), spans 3 (2 MiB), groups 5. */
const SMALL = 2;
const SPAN = 3;
const GROUP = 5;

/** An AnyValue message's fields (its content, without its own tag and length). */
function anyValueContent(w: ProtoWriter, value: AttributeValue): void {
  switch (typeof value) {
    case 'string':
      w.string(1, value);
      break;
    case 'boolean':
      w.tag(2, 0);
      w.varint(value ? 1 : 0);
      break;
    case 'number':
      if (Number.isSafeInteger(value) && value >= 0) {
        w.tag(3, 0);
        w.varint(value);
      } else w.double(4, value);
      break;
    default: {
      const array = w.open(5, SMALL);
      for (const item of value as ReadonlyArray<string | number | boolean | null | undefined>) {
        if (item === null || item === undefined) continue;
        const start = w.open(1, SMALL);
        anyValueContent(w, item);
        w.close(start, SMALL);
      }
      w.close(array, SMALL);
    }
  }
}

/**
 * What precedes an attribute's value, encoded once per attribute name (the names repeat on every span): the
 * KeyValue's tag and two length bytes, its `key` field, then the value's tag and two length bytes; both lengths are
 * filled in once the value is written. `double` marks the names whose numbers always go out as doubles.
 */
interface AttributePrefix {
  bytes: Buffer;
  /** Where the KeyValue's content starts in `bytes` (after its tag and length bytes). */
  contentAt: number;
  double: boolean;
}

/** Prefixes by the attribute list's field (a span's 9, the resource's 1), then by name. */
const attributePrefixes = new Map<number, Map<string, AttributePrefix>>();

function attributePrefix(field: number, key: string): AttributePrefix {
  let byName = attributePrefixes.get(field);
  if (byName === undefined) attributePrefixes.set(field, (byName = new Map()));
  let prefix = byName.get(key);
  if (prefix === undefined) {
    const w = new ProtoWriter(key.length * 3 + 16);
    const contentAt = w.open(field, SMALL);
    w.string(1, key);
    w.open(2, SMALL);
    prefix = { bytes: Buffer.from(w.buf.subarray(0, w.pos)), contentAt, double: DOUBLE_ATTRIBUTES.has(key) };
    // The names come from tollgate's code and its stage outcomes, not from clients; the bound is a safeguard.
    if (byName.size < 1_000) byName.set(key, prefix);
  }
  return prefix;
}

/**
 * An internal span's encoded `name` and `kind` fields (fields 5 and 6, next to each other in a span), kept for the
 * names that repeat on every request: the stages'.
 */
const internalNames = new Map<string, Buffer>();

function internalNameAndKind(name: string): Buffer {
  let encoded = internalNames.get(name);
  if (encoded === undefined) {
    const w = new ProtoWriter(name.length * 3 + 10);
    w.string(5, name);
    w.tag(6, 0);
    w.varint(SpanKind.INTERNAL + 1);
    encoded = Buffer.from(w.buf.subarray(0, w.pos));
    // Stage names come from tollgate's pipeline (built-ins and plugins), not from clients; the bound is a safeguard.
    if (internalNames.size < 1_000) internalNames.set(name, encoded);
  }
  return encoded;
}

/**
 * The prefixes of a list's names by slot, kept on the list: the tracer fills the same few lists for every span, so a
 * name is looked up once per list and slot instead of once per attribute (a slot whose name changed, like the request
 * span's last one, is looked up again).
 */
const LIST_PREFIXES = Symbol('otlpAttributePrefixes');
type PrefixedList = AttributeList & { [LIST_PREFIXES]?: { field: number; names: string[]; prefixes: AttributePrefix[] } };

/** A span's (or the resource's) attributes, given as a flat list of names and values. */
function attributeList(w: ProtoWriter, field: number, list: PrefixedList): void {
  let cached = list[LIST_PREFIXES];
  if (cached === undefined || cached.field !== field) {
    cached = { field, names: [], prefixes: [] };
    // A frozen list (a constant someone froze) is encoded all the same, its prefixes looked up each time.
    if (Object.isExtensible(list)) list[LIST_PREFIXES] = cached;
  }
  const { names, prefixes } = cached;
  for (let i = 0; i < list.length; i += 2) {
    const value = list[i + 1];
    if (value === undefined || value === null) continue;
    const key = list[i] as string;
    let prefix = prefixes[i];
    if (prefix === undefined || names[i] !== key) {
      prefix = prefixes[i] = attributePrefix(field, key);
      names[i] = key;
    }
    w.bytes(prefix.bytes);
    const valueStart = w.pos;
    const attributeStart = valueStart - prefix.bytes.length + prefix.contentAt;
    if (typeof value === 'number' && prefix.double) w.double(4, value);
    else anyValueContent(w, value);
    w.close(valueStart, SMALL);
    w.close(attributeStart, SMALL);
  }
}

const TWO_22 = 4_194_304;
/** The process's time origin (Unix ms): read once, it does not change (a getter call per timestamp otherwise). */
const TIME_ORIGIN = performance.timeOrigin;
const TWO_32 = 4_294_967_296;

/**
 * Unix nanoseconds of a `performance.now()` reading as fixed64 (microsecond precision). Nanoseconds since 1970 pass
 * 2^53, so the product micros * 1000 is formed in exact parts: micros = q * 2^22 + r, then
 * micros * 1000 = (q * 1000) * 2^22 + r * 1000, every term below 2^53.
 */
function timeField(w: ProtoWriter, field: number, performanceMs: number): void {
  const micros = Math.round((TIME_ORIGIN + performanceMs) * 1000);
  const q = Math.floor(micros / TWO_22);
  const r = micros - q * TWO_22;
  const m = q * 1000;
  let high = Math.floor(m / 1024);
  let low = (m - high * 1024) * TWO_22 + r * 1000;
  if (low >= TWO_32) {
    low -= TWO_32;
    high += 1;
  }
  // Signed, so the halves travel as small integers (no heap number for a low half past 2^31); fixed64 reads bits.
  w.fixed64(field, high | 0, low | 0);
}

function spanMessage(w: ProtoWriter, c: SpanRecord): void {
  const start = w.open(2, SPAN);
  w.traceId(1, c.traceId);
  w.words(2, c.idHigh, c.idLow);
  if (c.traceState) w.string(3, c.traceState);
  if (c.parentHigh !== 0 || c.parentLow !== 0) w.words(4, c.parentHigh, c.parentLow);
  if (c.kind === SpanKind.INTERNAL) w.bytes(internalNameAndKind(c.name));
  else {
    if (c.nameTail === null) w.string(5, c.name);
    else w.joined(5, c.name, c.nameTail);
    w.tag(6, 0);
    w.varint(c.kind + 1);
  }
  timeField(w, 7, c.startedAt);
  timeField(w, 8, c.endedAt);
  if (c.attributes) attributeList(w, 9, c.attributes);
  if (c.error !== null) {
    const status = w.open(15, SMALL);
    if (c.error) w.string(2, c.error.slice(0, 1_024));
    w.tag(3, 0);
    w.varint(2);
    w.close(status, SMALL);
  }
  w.close(start, SPAN);
}

/**
 * A batch being built: each span is encoded the moment it is added (nothing of it is kept but its bytes), after room
 * kept at the front for the envelope (the resource and scope around the spans, the same for every batch), which
 * `take` fills in: the body goes out in the buffer the spans were written to, not copied into another.
 */
export class ProtoSpanBatch implements SpanBatch {
  readonly contentType = 'application/x-protobuf';
  /** The resource message and the scope message, encoded once (with their tags and lengths). */
  private readonly resource: Buffer;
  private readonly scope: Buffer;
  /** Bytes before the first span: two tags with five length bytes each, the resource and the scope. */
  private readonly envelope: number;
  /** The batch being built: its envelope's room, then its encoded spans. */
  private spans: ProtoWriter;
  count = 0;

  constructor(source: SpanSource) {
    const resource = new ProtoWriter(1024);
    const resourceMessage = resource.open(1, SMALL);
    attributeList(resource, 1, source.resource);
    resource.close(resourceMessage, SMALL);
    this.resource = Buffer.from(resource.buf.subarray(0, resource.pos));
    const scope = new ProtoWriter(256);
    const scopeMessage = scope.open(1, SMALL);
    scope.string(1, source.scope.name);
    if (source.scope.version) scope.string(2, source.scope.version);
    scope.close(scopeMessage, SMALL);
    this.scope = Buffer.from(scope.buf.subarray(0, scope.pos));
    this.envelope = 2 * (1 + GROUP) + this.resource.length + this.scope.length;
    this.spans = this.emptyBatch(64 * 1024);
  }

  add(span: SpanRecord): void {
    const mark = this.spans.pos;
    try {
      spanMessage(this.spans, span);
    } catch (err) {
      // A span that could not be written whole is taken out again: its partial bytes would make the batch unreadable.
      this.spans.pos = mark;
      throw err;
    }
    this.count++;
  }

  take(): Buffer {
    const w = this.spans;
    const end = w.pos;
    // The envelope, written into the room kept for it: ResourceSpans { resource, ScopeSpans { scope, spans } }.
    w.pos = 0;
    const resourceSpans = w.open(1, GROUP);
    w.bytes(this.resource);
    const scopeSpans = w.open(2, GROUP);
    w.bytes(this.scope);
    w.pos = end;
    w.close(scopeSpans, GROUP);
    w.close(resourceSpans, GROUP);
    // The body is handed to the sender as it is: the next batch gets a buffer of its own, as large as this one grew.
    this.spans = this.emptyBatch(w.buf.length);
    this.count = 0;
    return w.buf.subarray(0, end);
  }

  private emptyBatch(size: number): ProtoWriter {
    const w = new ProtoWriter(size);
    w.pos = this.envelope;
    return w;
  }
}
