import { createServer, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/HTTP export carries it (protobuf or JSON), attributes read into plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  service: string;
}

// ---- protobuf: a generic reader, and the OTLP trace messages on top of it -------------------------------------

interface Field {
  field: number;
  wire: number;
  /** varint and fixed64 as bigint; length-delimited as bytes. */
  value: bigint | Buffer;
}

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = buf[pos++] as number;
      result |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return result;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const wire = key & 7;
    const field = key >>> 3;
    if (wire === 0) out.push({ field, wire, value: varint() });
    else if (wire === 1) {
      out.push({ field, wire, value: buf.readBigUInt64LE(pos) });
      pos += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ field, wire, value: buf.subarray(pos, pos + length) });
      pos += length;
    } else if (wire === 5) {
      out.push({ field, wire, value: BigInt(buf.readUInt32LE(pos)) });
      pos += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

function anyValueProto(buf: Buffer): unknown {
  const [f] = fields(buf);
  if (!f) return undefined;
  if (f.field === 1) return (f.value as Buffer).toString('utf8');
  if (f.field === 2) return f.value === 1n;
  if (f.field === 3) return Number(f.value);
  if (f.field === 4) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(f.value as bigint);
    return b.readDoubleLE(0);
  }
  if (f.field === 5) return fields(f.value as Buffer).map((item) => anyValueProto(item.value as Buffer));
  return undefined;
}

function attributesProto(list: Field[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of list) {
    const parts = fields(kv.value as Buffer);
    const key = (parts.find((p) => p.field === 1)?.value as Buffer).toString('utf8');
    const value = parts.find((p) => p.field === 2)?.value as Buffer | undefined;
    out[key] = value ? anyValueProto(value) : undefined;
  }
  return out;
}

function spansFromProto(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of fields(body).filter((f) => f.field === 1)) {
    const parts = fields(resourceSpans.value as Buffer);
    const resource = parts.find((p) => p.field === 1);
    const service = String(attributesProto(resource ? fields(resource.value as Buffer).filter((f) => f.field === 1) : [])['service.name']);
    for (const scopeSpans of parts.filter((p) => p.field === 2)) {
      for (const spanField of fields(scopeSpans.value as Buffer).filter((f) => f.field === 2)) {
        const s = fields(spanField.value as Buffer);
        const bytes = (n: number): string => ((s.find((p) => p.field === n)?.value as Buffer | undefined) ?? Buffer.alloc(0)).toString('hex');
        const status = s.find((p) => p.field === 15);
        const statusParts = status ? fields(status.value as Buffer) : [];
        spans.push({
          traceId: bytes(1),
          spanId: bytes(2),
          parentSpanId: bytes(4),
          name: (s.find((p) => p.field === 5)?.value as Buffer).toString('utf8'),
          kind: Number(s.find((p) => p.field === 6)?.value ?? 0n),
          startTimeUnixNano: s.find((p) => p.field === 7)?.value as bigint,
          endTimeUnixNano: s.find((p) => p.field === 8)?.value as bigint,
          attributes: attributesProto(s.filter((p) => p.field === 9)),
          status: {
            ...(statusParts.find((p) => p.field === 3) ? { code: Number(statusParts.find((p) => p.field === 3)?.value) } : {}),
            ...(statusParts.find((p) => p.field === 2) ? { message: (statusParts.find((p) => p.field === 2)?.value as Buffer).toString('utf8') } : {}),
          },
          service,
        });
      }
    }
  }
  return spans;
}

// ---- JSON --------------------------------------------------------------------------------------------------------

/** OTLP JSON ids are hex; a base64 id (the protobuf JSON mapping) is turned into hex. */
function hexId(id: unknown): string {
  if (typeof id !== 'string' || id === '') return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

function attributeValue(value: Record<string, unknown>): unknown {
  if ('stringValue' in value) return value.stringValue;
  if ('boolValue' in value) return value.boolValue;
  if ('intValue' in value) return Number(value.intValue);
  if ('doubleValue' in value) return Number(value.doubleValue);
  if ('arrayValue' in value) return ((value.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(attributeValue);
  return undefined;
}

function attributesJson(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const item of (list as Array<{ key: string; value: Record<string, unknown> }>) ?? []) out[item.key] = attributeValue(item.value);
  return out;
}

function spansFromJson(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  const parsed = JSON.parse(body.toString('utf8')) as { resourceSpans: any[] };
  for (const resource of parsed.resourceSpans) {
    const service = String(attributesJson(resource.resource?.attributes)['service.name']);
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: hexId(span.traceId),
          spanId: hexId(span.spanId),
          parentSpanId: hexId(span.parentSpanId),
          name: span.name,
          kind: span.kind,
          startTimeUnixNano: BigInt(span.startTimeUnixNano),
          endTimeUnixNano: BigInt(span.endTimeUnixNano),
          attributes: attributesJson(span.attributes),
          status: span.status ?? {},
          service,
        });
      }
    }
  }
  return spans;
}

/** The spans of one OTLP/HTTP trace export, by its content type (protobuf or JSON). */
export function decodeExport(body: Buffer, contentType: string): ReceivedSpan[] {
  return contentType.startsWith('application/json') ? spansFromJson(body) : spansFromProto(body);
}

/** A minimal OTLP/HTTP trace receiver for tests: decodes protobuf and JSON exports into spans. */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** The content types of the exports received, in order. */
  readonly contentTypes: string[] = [];
  /** Each export's Content-Encoding (`identity` when none), and its body's size as sent, in order. */
  readonly encodings: Array<{ encoding: string; bytes: number }> = [];
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (part: Buffer) => parts.push(part));
      req.on('end', () => {
        const type = String(req.headers['content-type']);
        if (req.url === '/v1/traces') {
          this.contentTypes.push(type);
          const sent = Buffer.concat(parts);
          // A collector inflates a gzipped export (OTLP/HTTP's only compression) before decoding it.
          const encoding = String(req.headers['content-encoding'] ?? 'identity');
          this.encodings.push({ encoding, bytes: sent.length });
          const body = encoding === 'gzip' ? gunzipSync(sent) : sent;
          this.spans.push(...decodeExport(body, type));
        }
        res.writeHead(200, { 'content-type': type }).end(type.startsWith('application/json') ? '{}' : '');
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async waitFor(check: (spans: ReceivedSpan[]) => boolean, timeoutMs = 8_000): Promise<ReceivedSpan[]> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this.spans)) {
      if (Date.now() > deadline) throw new Error(`spans did not arrive; got ${this.spans.map((s) => s.name).join(', ')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return this.spans;
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
