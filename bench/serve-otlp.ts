// Child-process entry: a live OTLP/HTTP trace receiver for the observability bench. It reads and decodes every
// export, protobuf or JSON (as a collector would) and counts the spans, which it prints to stderr when it stops.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { decodeExport } from '../test/helpers/otlp-receiver.js';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

/**
 * Walks an ExportTraceServiceRequest to its spans (resource_spans 1 -> scope_spans 2 -> spans 2), reading every
 * length on the way as a collector's decoder does, and counts them.
 */
function countProtoSpans(buf: Buffer): number {
  const walk = (start: number, end: number, onField: (field: number, from: number, to: number) => void): void => {
    let pos = start;
    const varint = (): number => {
      let result = 0;
      let factor = 1;
      for (;;) {
        const byte = buf[pos++] as number;
        result += (byte & 0x7f) * factor;
        if (byte < 0x80) return result;
        factor *= 128;
      }
    };
    while (pos < end) {
      const key = varint();
      const wire = key & 7;
      if (wire === 0) varint();
      else if (wire === 1) pos += 8;
      else if (wire === 5) pos += 4;
      else {
        const length = varint();
        onField(key >>> 3, pos, pos + length);
        pos += length;
      }
    }
  };
  let count = 0;
  walk(0, buf.length, (field, from, to) => {
    if (field !== 1) return;
    walk(from, to, (inner, a, b) => {
      if (inner !== 2) return;
      walk(a, b, (spanField) => {
        if (spanField === 2) count++;
      });
    });
  });
  return count;
}

const args = readServeArgs(false);
let spans = 0;
/** The exports' bodies as they arrived (compressed or not), to compare what each encoding puts on the wire. */
let bytes = 0;
const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (part: Buffer) => parts.push(part));
  req.on('end', () => {
    try {
      const sent = Buffer.concat(parts);
      bytes += sent.length;
      const body = req.headers['content-encoding'] === 'gzip' ? gunzipSync(sent) : sent;
      const type = String(req.headers['content-type']);
      spans += type.startsWith('application/x-protobuf') ? countProtoSpans(body) : decodeExport(body, type).length;
    } catch {
      // Not decodable: still answered, as a collector would with a 400; the count says what arrived.
    }
    res.writeHead(200, { 'content-type': String(req.headers['content-type']) }).end();
  });
});
await new Promise<void>((resolve) => server.listen(args.port, '127.0.0.1', resolve));
serveControl(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, async () => {
  console.error(`otlp receiver: ${spans} spans received, ${bytes} bytes (${spans > 0 ? (bytes / spans).toFixed(1) : '-'} a span)`);
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
