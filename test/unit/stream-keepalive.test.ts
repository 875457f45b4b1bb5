import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestContext } from '../../src/core/context.js';
import { streamKeepAlive } from '../../src/http/stream-keepalive.js';

/**
 * The keep-alive against a real socket whose client does not read: once the socket buffer is full, no keep-alive
 * is queued behind it (they would pile up in memory for a client that is not there to read them).
 */

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

let server: Server | null = null;
let client: Socket | null = null;
afterEach(async () => {
  client?.destroy();
  await new Promise((done) => (server ? server.close(done) : done(null)));
  server = null;
  client = null;
});

function context(intervalMs: number, upstreamStatus: number): RequestContext {
  const upstreamAnswering = upstreamStatus >= 200 && upstreamStatus < 300;
  return { stream: true, config: { settings: { streamKeepaliveMs: intervalMs } }, upstream: { status: upstreamStatus }, upstreamAnswering, upstreamAnsweredAt: 0 } as unknown as RequestContext;
}

/** A server whose one answer is handed to `serve`; a client that sends a request and never reads. */
async function unreadAnswer(): Promise<ServerResponse> {
  const answer = new Promise<ServerResponse>((resolve) => {
    server = createServer((_req, res) => resolve(res));
  });
  await new Promise<void>((done) => server?.listen(0, '127.0.0.1', done));
  const { port } = server!.address() as AddressInfo;
  client = connect(port, '127.0.0.1', () => client?.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  client.pause();
  return answer;
}

describe('streamKeepAlive', () => {
  it('writes nothing while the socket buffer is full,', async () => {
    const res = await unreadAnswer();
    const open = () => res.writeHead(200, { 'content-type': 'text/event-stream' });
    const touch = streamKeepAlive(res, context(30, 200), ': keep-alive\n\n', open);
    expect(touch).not.toBeNull();
    open();
    // Far more than the socket and the client's kernel buffers hold.
    res.write(`data: ${'x'.repeat(32 * 1024 * 1024)}\n\n`);
    touch?.();
    await sleep(50);
    expect(res.writableNeedDrain).toBe(true);
    const queued = res.writableLength;
    await sleep(300);
    // Keep-alives written anyway would add to what waits (nothing drains: the client reads nothing).
    expect(res.writableLength).toBeLessThanOrEqual(queued);
    res.destroy();
  });

  it('opens the answer only once its upstream answered 2xx', async () => {
    const res = await unreadAnswer();
    const ctx = context(30, 0);
    let opened = 0;
    streamKeepAlive(res, ctx, ': keep-alive\n\n', () => {
      opened++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
    });
    await sleep(150);
    expect(opened).toBe(0);
    expect(res.headersSent).toBe(false);
    // The call stage sets both as the attempt's upstream answers 2xx.
    (ctx.upstream as { status: number }).status = 200;
    ctx.upstreamAnswering = true;
    ctx.upstreamAnsweredAt = performance.now();
    await sleep(150);
    expect(opened).toBe(1);
    expect(res.headersSent).toBe(true);
    res.end();
  });

  it('waits a whole interval from the upstream\'s 2xx: an attempt that breaks off just after it opens nothing', async () => {
    const res = await unreadAnswer();
    const ctx = context(60, 0);
    let opened = 0;
    streamKeepAlive(res, ctx, ': keep-alive\n\n', () => {
      opened++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
    });
    // Silent since the request began; the upstream answers 2xx just before a beat is due, and fails 30 ms later.
    await sleep(50);
    ctx.upstreamAnswering = true;
    ctx.upstreamAnsweredAt = performance.now();
    await sleep(30);
    expect(opened).toBe(0);
    ctx.upstreamAnswering = false;
    await sleep(150);
    expect(opened).toBe(0);
    expect(res.headersSent).toBe(false);
    // A later attempt that answers and stays silent gets its keep-alive an interval after its 2xx.
    ctx.upstreamAnswering = true;
    ctx.upstreamAnsweredAt = performance.now();
    await sleep(150);
    expect(opened).toBe(1);
    res.end();
  });

  it('is off at 0 and for a whole answer', async () => {
    const res = await unreadAnswer();
    expect(streamKeepAlive(res, context(0, 200), ': keep-alive\n\n', () => undefined)).toBeNull();
    expect(streamKeepAlive(res, { ...context(30, 200), stream: false } as RequestContext, ': keep-alive\n\n', () => undefined)).toBeNull();
    res.end();
  });
});
