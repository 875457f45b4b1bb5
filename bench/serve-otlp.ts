// Child-process entry: a live OTLP/HTTP trace receiver for the observability bench. It reads and decodes every
// export (as a collector would) and counts the spans, which it prints to stderr when it stops.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readServeArgs } from './serve-args.js';
import { serveControl } from './serve-control.js';

const args = readServeArgs(false);
let spans = 0;
const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (part: Buffer) => parts.push(part));
  req.on('end', () => {
    try {
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as { resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: unknown[] }> }> };
      for (const resource of body.resourceSpans ?? []) for (const scope of resource.scopeSpans ?? []) spans += scope.spans?.length ?? 0;
    } catch {
      // Not JSON: still answered, as a collector would with a 400; the count says what arrived.
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
await new Promise<void>((resolve) => server.listen(args.port, '127.0.0.1', resolve));
serveControl(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, async () => {
  console.error(`otlp receiver: ${spans} spans received`);
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
