import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// An MCP server that answers a 50 MB tool result (a bug, or a hostile server) must not take the gateway's memory:
// tollgate reads at most max_answer_bytes of an answer, fails that call with a tool error at once, and goes on
// serving. The HTTP servers run in processes of their own, so the gateway's RSS is the gateway's alone.

const FIXTURES = resolve(import.meta.dirname, '../fixtures/mcp');
const HUGE = 50 * 1024 * 1024;
const LIMIT = 1024 * 1024;

const children: ChildProcess[] = [];

async function startServer(mode: 'json' | 'sse', list = false): Promise<string> {
  const args = [resolve(FIXTURES, 'big-http-server.mjs'), mode, ...(list ? ['list'] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LIST_BYTES: String(2 * LIMIT) } });
  children.push(child);
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  for await (const line of lines) return line.trim();
  throw new Error('the fixture server did not start');
}

let tg: RunningGateway;

beforeAll(async () => {
  const [json, sse] = await Promise.all([startServer('json'), startServer('sse')]);
  tg = await startGateway({
    mcp: {
      servers: {
        json: { type: 'http', url: json, max_answer_bytes: LIMIT },
        sse: { type: 'http', url: sse, max_answer_bytes: LIMIT },
        local: { type: 'stdio', command: process.execPath, args: [resolve(FIXTURES, 'stdio-server.mjs')], max_answer_bytes: LIMIT },
      },
      call_timeout_ms: 20_000,
    },
  });
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const view = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { servers: Array<{ state: string }> };
    if (view.servers.every((server) => server.state === 'ready')) break;
    await new Promise((done) => setTimeout(done, 50));
  }
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  for (const child of children) child.kill();
});

async function callTool(name: string, args: Record<string, unknown>): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, arguments: args }) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** The gateway's highest RSS while `work` runs, above what it was before. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
  try {
    const result = await work();
    return { result, growth: Math.max(peak, process.memoryUsage().rss) - before };
  } finally {
    clearInterval(sampler);
  }
}

describe('max_answer_bytes', () => {
  for (const server of ['json', 'sse'] as const) {
    it(`fails a tool call whose ${server === 'json' ? 'JSON' : 'event stream'} answer is past the limit, at once, without reading it, and keeps serving`, async () => {
      const started = performance.now();
      const { result: huge, growth } = await peakGrowth(() =>
        Promise.all([callTool(`${server}__big`, { bytes: HUGE }), callTool(`${server}__add`, { a: 2, b: 3 }), fetch(`${tg.url}/health`).then((res) => res.status)]),
      );
      const [big, add, health] = huge;
      expect(big.status).toBe(502);
      expect(big.body.error.message).toContain('max_answer_bytes');
      expect(big.body.error.message).toContain(`more than ${LIMIT} bytes`);
      // Well before the call timeout: the call failed when the limit was passed, not when it gave up waiting.
      expect(performance.now() - started).toBeLessThan(10_000);
      // Read whole, 50 MB of JSON text is 100+ MB of memory; cut at 1 MB, a few.
      expect(growth).toBeLessThan(40 * 1024 * 1024);
      // Other calls, of the same server too, went on; it stays connected and answers the next.
      expect(add.body).toMatchObject({ status: 'ok', text: '5' });
      expect(health).toBe(200);
      expect((await callTool(`${server}__add`, { a: 1, b: 1 })).body).toMatchObject({ status: 'ok', text: '2' });
    }, 30_000);
  }

  it('fails a stdio server\'s call past the limit saying so (the SDK closes the server, which is started again)', async () => {
    const big = await callTool('local__big', { bytes: HUGE });
    expect(big.status).toBe(502);
    expect(big.body.error.message).toContain('max_answer_bytes');
    const deadline = Date.now() + 15_000;
    let add = await callTool('local__add', { a: 2, b: 2 });
    while (add.body.status !== 'ok' && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 100));
      add = await callTool('local__add', { a: 2, b: 2 });
    }
    expect(add.body).toMatchObject({ status: 'ok', text: '4' });
  }, 30_000);

  it('drops a server whose tool list is past the limit at once, saying why, rather than wait out the handshake', async () => {
    const url = await startServer('sse', true);
    const started = Date.now();
    const patched = await fetch(`${tg.url}/api/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ mcp: { servers: { listy: { type: 'http', url, max_answer_bytes: LIMIT } } } }),
    });
    expect(patched.status, await patched.text()).toBe(200);
    let listy: { state: string; last_error: string | null } | undefined;
    while (Date.now() - started < 12_000) {
      const view = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string; last_error: string | null }> };
      listy = view.servers.find((server) => server.name === 'listy');
      if (listy?.last_error) break;
      await new Promise((done) => setTimeout(done, 50));
    }
    expect(listy?.last_error).toContain('max_answer_bytes');
    // The SDK's own wait for a tool list is 15 s.
    expect(Date.now() - started).toBeLessThan(8_000);
  }, 30_000);

  it('refuses a max_answer_bytes below 1 KiB in the config', async () => {
    const res = await fetch(`${tg.url}/api/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ mcp: { max_answer_bytes: 10 } }),
    });
    expect(res.status).toBe(400);
  });
});
