import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { ResponseEvent } from '../../src/core/canonical.js';
import { createRequestContext, type RequestContext } from '../../src/core/context.js';
import { serveAnswer } from '../../src/http/answer-stream.js';
import { createLog } from '../../src/log.js';

// A full garbage collection on demand, to see what a finished request still keeps reachable.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/**
 * A request's context outlives its answer (its after-work and the subscribers of its terminal event read it). While
 * the answer is written, the context's backpressure check reaches the response; once it is written, nothing of the
 * context may keep the response, and through it the request's HTTP objects, alive. When it did, every request's
 * HTTP objects survived the young-generation collections after it: scavenges took 3-4 ms instead of 1
 * (bench/RESULTS.md, issue 22).
 */
describe('a finished answer', () => {
  it('is not kept reachable by the request context that outlives it', async () => {
    const contexts: RequestContext[] = [];
    const responses: Array<WeakRef<ServerResponse>> = [];
    const server = createServer((_req, res) => {
      const ctx = createRequestContext({ dialect: 'openai', config: null as never, request: { model: 'm', messages: [] } });
      contexts.push(ctx);
      responses.push(new WeakRef(res));
      const answer = of({ kind: 'completion', completion: { id: 'x' } } as unknown as ResponseEvent);
      void serveAnswer(res, ctx, answer, createLog('silent'), {
        complete() {
          // While the answer is written the check reads the response's socket buffer.
          expect(ctx.clientReady()).toBeNull();
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{}');
        },
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (let i = 0; i < 3; i++) expect(await (await fetch(url, { headers: { connection: 'close' } })).text()).toBe('{}');
      server.closeAllConnections();
      await new Promise((done) => setTimeout(done, 50));
      gc();
      await new Promise((done) => setTimeout(done, 10));
      gc();
      expect(contexts).toHaveLength(3);
      // The contexts are still held here; the responses they answered are gone.
      expect(responses.map((ref) => ref.deref() === undefined)).toEqual([true, true, true]);
      for (const ctx of contexts) expect(ctx.clientReady()).toBeNull();
    } finally {
      await new Promise<void>((done) => server.close(() => done()));
    }
  });
});
