import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// A stateless streamable HTTP MCP server (what the MCP SDK recommends for HTTP) serves each JSON-RPC request on its
// own POST, with a server made for it: the `notifications/cancelled` that follows a call given up on arrives on
// another POST, at another server, which knows nothing of the call. The call's own request is what the server can
// see end: while it stays open the tool runs on (an expensive query nobody waits for) and its connection is held.

const CALL_TIMEOUT_MS = 300;

let tg: RunningGateway;
let server: { url: string; close(): Promise<void> };
/** Each call of `slow`: when it began and when its request was cancelled (null while it runs on). */
const runs: Array<{ cancelledAt: number | null }> = [];

async function until(what: string, probe: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 20));
  }
}

beforeAll(async () => {
  server = await serveMcpOverHttp(() => {
    const mcp = new McpServer({ name: 'warehouse', version: '1.0.0' });
    mcp.registerTool('slow', { description: 'A long query', inputSchema: { sql: z.string() } }, (_args, extra) => {
      const run: { cancelledAt: number | null } = { cancelledAt: null };
      runs.push(run);
      return new Promise((resolve) => {
        const timer = setTimeout(() => resolve({ content: [{ type: 'text', text: 'done' }] }), 30_000);
        extra.signal.addEventListener('abort', () => {
          run.cancelledAt = Date.now();
          clearTimeout(timer);
          resolve({ content: [{ type: 'text', text: 'cancelled' }], isError: true });
        });
      });
    });
    mcp.registerTool('quick', { description: 'A short query', inputSchema: { sql: z.string() } }, async ({ sql }) => ({ content: [{ type: 'text', text: `rows for ${sql}` }] }));
    return mcp;
  });
  tg = await startGateway({ mcp: { servers: { warehouse: { type: 'http', url: server.url } }, call_timeout_ms: CALL_TIMEOUT_MS } });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await (await fetch(`${tg.url}/api/mcp`)).json()) as { tools: unknown[] }).tools.length < 2) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  await server?.close();
});
afterEach(() => {
  runs.length = 0;
});

const call = (name: string, signal?: AbortSignal): Promise<Response> =>
  fetch(`${tg.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, arguments: { sql: 'select 1' } }), ...(signal ? { signal } : {}) });

describe('a tool call given up on, on a stateless HTTP MCP server', () => {
  it('ends the call at the server when it times out, and the server answers the next call', async () => {
    const res = await call('warehouse__slow');
    expect(res.status).toBe(504);
    await until('the server to see the call end', () => runs[0]?.cancelledAt != null);
    const next = await call('warehouse__quick');
    expect(next.status).toBe(200);
    expect(((await next.json()) as { text: string }).text).toBe('rows for select 1');
  });

  it('ends the call at the server when its caller hangs up', async () => {
    const controller = new AbortController();
    const pending = call('warehouse__slow', controller.signal).catch(() => null);
    await until('the call to start', () => runs.length === 1);
    controller.abort();
    await pending;
    await until('the server to see the call end', () => runs[0]?.cancelledAt != null, 2_000);
  });
});
