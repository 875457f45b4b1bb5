import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request } from 'undici';

export interface BareProxy {
  url: string;
  close(): Promise<void>;
}

/** Request headers worth passing on; hop-by-hop ones (connection, host, ...) must not be forwarded. */
const FORWARDED_HEADERS = ['content-type', 'authorization', 'accept'];

/**
 * The floor the gateway is measured against: the least a pass-through proxy does. It reads the request
 * body (tiny here, and the gateway must read it too), sends it upstream with `undici.request` on a keep-alive
 * pool, and streams status, content-type and body back, chunk by chunk, so SSE passes through as it arrives.
 * No parsing, no logging, no accounting.
 */
export async function startBareProxy(options: { upstream: string; port?: number; host?: string }): Promise<BareProxy> {
  // Same pool settings as the gateway's UpstreamTransport, so both pay the same connection costs.
  const agent = new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000, connect: { timeout: 10_000 } });

  function readBody(req: IncomingMessage): Promise<Buffer> {
    return new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.once('end', () => resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
      req.once('error', reject);
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const upstream = await request(`${options.upstream}${req.url ?? '/'}`, {
      method: req.method as 'POST',
      headers,
      body: body.length > 0 ? body : null,
      dispatcher: agent,
    });
    const out: Record<string, string> = {};
    const type = upstream.headers['content-type'];
    if (typeof type === 'string') out['content-type'] = type;
    const length = upstream.headers['content-length'];
    if (typeof length === 'string') out['content-length'] = length;
    res.writeHead(upstream.statusCode, out);
    // .pipe() rather than stream.pipeline(): pipeline sets up an AbortController per call and aborts it
    // (building a DOMException) when done, which showed up as ~8% of this proxy's CPU in a profile.
    upstream.body.pipe(res);
    upstream.body.once('error', () => res.destroy());
    res.once('close', () => {
      if (!res.writableFinished) upstream.body.destroy();
    });
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
      else res.destroy();
    });
  });
  // Clients (autocannon) keep connections open between requests, like SDKs do.
  server.keepAliveTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('bare proxy: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await agent.close();
    },
  };
}
