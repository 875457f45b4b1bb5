import { resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { startHttpMcpServer, type HttpMcpServer } from '../fixtures/mcp/http-server.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const STDIO_SERVER = resolve(import.meta.dirname, '../fixtures/mcp/stdio-server.mjs');
const TOKEN = 'mcp-fixture-token-1234567890';
const MAX_RESULT_BYTES = 2_000;
const CALL_TIMEOUT_MS = 800;

interface ServerView {
  name: string;
  type: string;
  state: string;
  tools: number;
  last_error: string | null;
  pid: number | null;
  config: Record<string, unknown>;
}

let http: HttpMcpServer;
let tg: RunningGateway;
let stopped = false;
const called: Array<GatewayEvents['mcp.tool.called']> = [];
const failed: Array<GatewayEvents['mcp.tool.failed']> = [];

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

async function mcpView(): Promise<{ servers: ServerView[]; tools: Array<{ name: string; server: string; tool: string; description: string; input_schema: unknown }> }> {
  const res = await fetch(`${tg.url}/api/mcp`);
  expect(res.status).toBe(200);
  return res.json() as never;
}

async function server(name: string): Promise<ServerView> {
  const found = (await mcpView()).servers.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no server ${name}`);
  return found;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function createKey(body: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${tg.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `k-${Math.random().toString(36).slice(2)}`, ...body }) });
  expect(res.status).toBe(201);
  return ((await res.json()) as { key: string }).key;
}

async function callTool(key: string | null, name: string, args: Record<string, unknown> = {}): Promise<{ status: number; body: Record<string, any>; headers: Headers }> {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify({ name, arguments: args }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
}

async function mcpClient(key: string | null): Promise<Client> {
  const client = new Client({ name: 'test-client', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${tg.url}/mcp`), { requestInit: { headers: key ? { authorization: `Bearer ${key}` } : {} } });
  await client.connect(transport);
  return client;
}

beforeAll(async () => {
  // A variable of the gateway's own environment that no stdio server may see (only a minimal safe set is passed on).
  process.env.TOLLGATE_MCP_TEST_SECRET = 'do-not-leak';
  http = await startHttpMcpServer(TOKEN);
  tg = await startGateway({
    mcp: {
      servers: {
        local: { type: 'stdio', command: process.execPath, args: [STDIO_SERVER], env: { FIXTURE_GREETING: 'hello' } },
        remote: { type: 'http', url: http.url, token: TOKEN },
      },
      call_timeout_ms: CALL_TIMEOUT_MS,
      max_result_bytes: MAX_RESULT_BYTES,
    },
  });
  tg.gateway.bus.on('mcp.tool.called', (event) => called.push(event));
  tg.gateway.bus.on('mcp.tool.failed', (event) => failed.push(event));
  await until('both MCP servers ready', async () => (await mcpView()).servers.every((entry) => entry.state === 'ready'));
}, 30_000);

afterAll(async () => {
  delete process.env.TOLLGATE_MCP_TEST_SECRET;
  if (!stopped) await tg?.stop();
  await http?.close();
});

describe('the MCP hub', () => {
  it('connects both servers and lists their tools, namespaced, in /api/mcp (secrets masked) and /health', async () => {
    const view = await mcpView();
    expect(view.servers.map((entry) => [entry.name, entry.type, entry.state])).toEqual([
      ['local', 'stdio', 'ready'],
      ['remote', 'http', 'ready'],
    ]);
    const names = view.tools.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['local__add', 'local__hang', 'local__fail', 'local__big', 'remote__lookup', 'remote__secret']));
    const add = view.tools.find((tool) => tool.name === 'local__add');
    expect(add).toMatchObject({ server: 'local', tool: 'add', description: 'Adds two numbers.', input_schema: { type: 'object', properties: { a: { type: 'number' } } } });
    const local = view.servers[0]!;
    expect(local.pid).toEqual(expect.any(Number));
    expect(local.config).toMatchObject({ type: 'stdio', command: process.execPath });
    const remote = view.servers[1]!;
    expect(remote.pid).toBeNull();
    expect(JSON.stringify(remote.config)).not.toContain(TOKEN);
    expect(remote.config.token).toEqual(expect.any(String));

    const tools = (await (await fetch(`${tg.url}/api/mcp/tools?server=remote`)).json()) as { tools: Array<{ name: string }> };
    expect(tools.tools.map((tool) => tool.name).sort()).toEqual(['remote__lookup', 'remote__secret']);

    const health = (await (await fetch(`${tg.url}/health`)).json()) as Record<string, any>;
    expect(health.status).toBe('ok');
    expect(health.mcp).toMatchObject({ ready: 2, configured: 2 });
    expect(health.mcp.servers).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'local', state: 'ready' })]));
  });

  it('starts stdio servers with a minimal environment plus their own variables', async () => {
    expect((await callTool(null, 'local__env', { name: 'FIXTURE_GREETING' })).body.text).toBe('hello');
    expect((await callTool(null, 'local__env', { name: 'TOLLGATE_MCP_TEST_SECRET' })).body.text).toBe('(unset)');
  });
});

describe('POST /v1/mcp/tools/call', () => {
  it('calls a tool with a virtual key and answers its content, text and timing', async () => {
    const key = await createKey({ mcp: { allow: ['local', 'remote__lookup'] } });
    const add = await callTool(key, 'local__add', { a: 2, b: 3 });
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({ name: 'local__add', status: 'ok', is_error: false, content: [{ type: 'text', text: '5' }], text: '5', truncated: false });
    expect(add.body.duration_ms).toEqual(expect.any(Number));

    const lookup = await callTool(key, 'remote__lookup', { key: 'colour' });
    expect(lookup.status).toBe(200);
    expect(lookup.body).toMatchObject({ text: 'value-of-colour', structured_content: { key: 'colour', value: 'value-of-colour' } });

    // The tool reported its own failure: still a 200, with is_error.
    const fail = await callTool(key, 'local__fail');
    expect(fail.status).toBe(200);
    expect(fail.body).toMatchObject({ status: 'ok', is_error: true, text: 'it failed on purpose' });
  });

  it('refuses a tool outside the key\'s allow-list (403) and an unknown tool (404), in the OpenAI error shape', async () => {
    const key = await createKey({ mcp: { allow: ['local', 'remote__lookup'] } });
    const secret = await callTool(key, 'remote__secret');
    expect(secret.status).toBe(403);
    expect(secret.body.error).toMatchObject({ code: 'mcp_tool_not_allowed', type: 'permission_error', param: 'name' });
    const unknown = await callTool(key, 'local__nope');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'mcp_tool_not_found' });
    // A name outside the allow-list is a 403 whether or not a server offers it: the key cannot probe which tools exist.
    const missingOutside = await callTool(key, 'remote__nope');
    expect(missingOutside.status).toBe(403);
    expect(missingOutside.body.error).toEqual({ ...secret.body.error, message: secret.body.error.message.replace('remote__secret', 'remote__nope') });
    expect((await callTool(key, 'nowhere__tool')).status).toBe(403);
    const badKey = await callTool('tg-not-a-real-key', 'local__add', { a: 1, b: 1 });
    expect(badKey.status).toBe(401);
    expect(badKey.body.error.code).toBe('invalid_api_key');
    const noName = await fetch(`${tg.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noName.status).toBe(400);
  });

  it('applies the key\'s tool_calls_per_minute (429 with retry-after)', async () => {
    const key = await createKey({ mcp: { tool_calls_per_minute: 1 } });
    expect((await callTool(key, 'local__add', { a: 1, b: 1 })).status).toBe(200);
    const second = await callTool(key, 'local__add', { a: 1, b: 1 });
    expect(second.status).toBe(429);
    expect(second.body.error.code).toBe('rate_limit_exceeded');
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('times a hanging tool out into a 504 mcp_tool_timeout, and the server stays usable', async () => {
    const started = Date.now();
    const hang = await callTool(null, 'local__hang');
    expect(hang.status).toBe(504);
    expect(hang.body.error).toMatchObject({ code: 'mcp_tool_timeout', type: 'timeout_error' });
    expect(hang.body.error.message).toContain(`${CALL_TIMEOUT_MS} ms`);
    expect(Date.now() - started).toBeLessThan(CALL_TIMEOUT_MS + 3_000);
    expect((await callTool(null, 'local__add', { a: 40, b: 2 })).body.text).toBe('42');
  });

  it('cuts a result at max_result_bytes and says so', async () => {
    const big = await callTool(null, 'local__big', { bytes: 10_000 });
    expect(big.status).toBe(200);
    expect(big.body.truncated).toBe(true);
    expect(Buffer.byteLength(big.body.text)).toBeLessThanOrEqual(MAX_RESULT_BYTES);
    expect(big.body.text).toContain('[truncated');
    expect(Buffer.byteLength(JSON.stringify(big.body.content))).toBeLessThanOrEqual(MAX_RESULT_BYTES + 200);
  });

  it('reports every call as mcp.tool.called, and failures as mcp.tool.failed too', async () => {
    const key = await createKey({ mcp: { allow: ['local'] } });
    called.length = 0;
    failed.length = 0;
    await callTool(key, 'local__add', { a: 1, b: 2 });
    await callTool(key, 'local__hang');
    await callTool(key, 'local__big', { bytes: 5_000 });
    expect(called.map((event) => [event.tool, event.status, event.via])).toEqual([
      ['add', 'ok', 'api'],
      ['hang', 'error', 'api'],
      ['big', 'ok', 'api'],
    ]);
    expect(called[0]).toMatchObject({ server: 'local', keyId: expect.stringMatching(/.+/), isError: false, truncated: false, argumentsBytes: 13 });
    expect(called[0]!.requestId).toEqual(expect.any(String));
    expect(called[2]).toMatchObject({ truncated: true, resultBytes: expect.any(Number) });
    expect(called[2]!.resultBytes).toBeGreaterThan(5_000);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ tool: 'hang', status: 'error', error: expect.stringContaining('did not answer') });
  });
});

describe('keeping the tool lists and connections current', () => {
  it('refreshes a server\'s tools on tools/list_changed', async () => {
    expect((await mcpView()).tools.map((tool) => tool.name)).not.toContain('local__extra');
    expect((await callTool(null, 'local__add_extra')).body.text).toBe('added');
    await until('local__extra listed', async () => (await mcpView()).tools.some((tool) => tool.name === 'local__extra'));
    expect((await callTool(null, 'local__extra')).body.text).toBe('extra');
    await callTool(null, 'local__remove_extra');
    await until('local__extra gone', async () => !(await mcpView()).tools.some((tool) => tool.name === 'local__extra'));
  });

  it('reconnects a stdio server that was killed, and its tools come back', async () => {
    const before = await server('local');
    const pid = before.pid!;
    process.kill(pid, 'SIGKILL');
    await until('the killed server process gone', async () => !alive(pid));
    const after = await until('local ready again with a new process', async () => {
      const entry = await server('local');
      return entry.state === 'ready' && entry.pid !== pid ? entry : null;
    });
    expect(after.pid).toEqual(expect.any(Number));
    expect(after.tools).toBe(before.tools);
    expect((await callTool(null, 'local__add', { a: 2, b: 2 })).body.text).toBe('4');
  });

  it('keeps an unchanged server\'s connection and closes a removed one when the config changes', async () => {
    const local = await server('local');
    const res = await fetch(`${tg.url}/api/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ mcp: { servers: { local: { type: 'stdio', command: process.execPath, args: [STDIO_SERVER], env: { FIXTURE_GREETING: 'hello' } } }, call_timeout_ms: CALL_TIMEOUT_MS, max_result_bytes: MAX_RESULT_BYTES } }),
    });
    expect(res.status, await res.text()).toBe(200);
    await until('remote gone', async () => (await mcpView()).servers.every((entry) => entry.name !== 'remote'));
    expect((await server('local')).pid).toBe(local.pid);
    expect((await mcpView()).tools.some((tool) => tool.server === 'remote')).toBe(false);
    expect((await callTool(null, 'remote__lookup', { key: 'x' })).status).toBe(404);
    // Back as it was, for the tests below.
    const back = await fetch(`${tg.url}/api/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ mcp: { servers: { remote: { type: 'http', url: http.url, token: TOKEN } } } }),
    });
    expect(back.status, await back.text()).toBe(200);
    await until('remote ready again', async () => (await mcpView()).servers.some((entry) => entry.name === 'remote' && entry.state === 'ready'));
    expect((await server('local')).pid).toBe(local.pid);
  });

  it('reconnects an HTTP server a call could not reach, once it is back', async () => {
    const port = Number(new URL(http.url).port);
    await http.close();
    const down = await callTool(null, 'remote__lookup', { key: 'x' });
    expect(down.status).toBe(502);
    expect(down.body.error.code).toBe('mcp_tool_failed');
    await until('remote not ready', async () => (await server('remote')).state !== 'ready');
    http = await startHttpMcpServer(TOKEN, port);
    await until('remote ready again', async () => (await server('remote')).state === 'ready');
    expect((await callTool(null, 'remote__lookup', { key: 'y' })).body.text).toBe('value-of-y');
  });
});

describe('/mcp: tollgate as an MCP server', () => {
  it('lists and calls the tools a key may use, through the official SDK client', async () => {
    const key = await createKey({ mcp: { allow: ['local__add', 'remote__lookup'] } });
    const client = await mcpClient(key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name).sort()).toEqual(['local__add', 'remote__lookup']);
      expect(tools.find((tool) => tool.name === 'local__add')).toMatchObject({ description: 'Adds two numbers.', inputSchema: { type: 'object' } });
      // What the server says of its tool reaches the client: its title and its hints (a client asks before running a
      // tool that is not read-only).
      expect(tools.find((tool) => tool.name === 'remote__lookup')).toMatchObject({ title: 'Key lookup', description: 'Looks a key up.', annotations: { readOnlyHint: true, openWorldHint: false } });
      const sum = await client.callTool({ name: 'local__add', arguments: { a: 20, b: 22 } });
      expect(sum).toMatchObject({ content: [{ type: 'text', text: '42' }], isError: false });
      const lookup = await client.callTool({ name: 'remote__lookup', arguments: { key: 'k' } });
      expect(lookup.structuredContent).toEqual({ key: 'k', value: 'value-of-k' });
      // Outside the allow-list: not listed, and refused, whether a server offers the tool or not (no probing).
      await expect(client.callTool({ name: 'remote__secret', arguments: {} })).rejects.toThrow(/may not use/);
      await expect(client.callTool({ name: 'local__nope', arguments: {} })).rejects.toThrow(/may not use/);
    } finally {
      await client.close();
    }
    expect(called.at(-1)).toMatchObject({ via: 'mcp', tool: 'lookup', server: 'remote' });
  });

  it("lists a tool's output schema, and gives its structured result, or an error result when max_result_bytes cut it", async () => {
    const key = await createKey({ mcp: { allow: ['local'] } });
    const client = await mcpClient(key);
    try {
      const { tools } = await client.listTools();
      expect(tools.find((tool) => tool.name === 'local__report')?.outputSchema).toMatchObject({ type: 'object', properties: { body: { type: 'string' } } });
      // The SDK client checks the structured result against the schema.
      expect((await client.callTool({ name: 'local__report', arguments: { bytes: 10 } })).structuredContent).toEqual({ body: 'r'.repeat(10) });
      // Past max_result_bytes the structured result is left out: an answer without it would fail the SDK client.
      const cut = await client.callTool({ name: 'local__report', arguments: { bytes: MAX_RESULT_BYTES * 2 } });
      expect(cut.isError).toBe(true);
      expect((cut.content as Array<{ text: string }>)[0]?.text).toMatch(/did not fit in max_result_bytes/);
    } finally {
      await client.close();
    }
  });

  it('passes a tool\'s isError through, and a hub failure as an error result', async () => {
    const key = await createKey({ mcp: { allow: ['local'] } });
    const client = await mcpClient(key);
    try {
      expect(await client.callTool({ name: 'local__fail', arguments: {} })).toMatchObject({ isError: true, content: [{ type: 'text', text: 'it failed on purpose' }] });
      const hang = await client.callTool({ name: 'local__hang', arguments: {} });
      expect(hang.isError).toBe(true);
      expect(JSON.stringify(hang.content)).toContain('did not answer');
    } finally {
      await client.close();
    }
  });

  it('applies the tool-call rate limit as a tool error', async () => {
    const key = await createKey({ mcp: { tool_calls_per_minute: 1 } });
    const client = await mcpClient(key);
    try {
      expect((await client.callTool({ name: 'local__add', arguments: { a: 1, b: 1 } })).isError).toBe(false);
      const limited = await client.callTool({ name: 'local__add', arguments: { a: 1, b: 1 } });
      expect(limited.isError).toBe(true);
      expect(JSON.stringify(limited.content)).toContain('rate limit');
    } finally {
      await client.close();
    }
  });

  it('refuses a client without a virtual key (401), or with an unknown one', async () => {
    await expect(mcpClient(null)).rejects.toThrow(/401|virtual key/i);
    await expect(mcpClient('tg-unknown-key-000')).rejects.toThrow(/401|not known/i);
    const raw = await fetch(`${tg.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}' });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe('Bearer');
    expect(await raw.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 } });
    expect((await fetch(`${tg.url}/mcp`)).status).toBe(405);
  });

  it('answers a body it cannot read in JSON-RPC, as the MCP transport does: a parse error, a wrong content type', async () => {
    const key = await createKey({});
    const headers = { accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` };
    const broken = await fetch(`${tg.url}/mcp`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{"jsonrpc":"2.0",' });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringMatching(/^Parse error/) } });
    const text = await fetch(`${tg.url}/mcp`, { method: 'POST', headers: { ...headers, 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(415);
    expect(await text.json()).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000 } });
  });

  it('answers with the request id, as every other route does', async () => {
    const key = await createKey({});
    const raw = await fetch(`${tg.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${key}` },
      body: '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}',
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('x-request-id')).toMatch(/^\d{15}-\d{6}$/);
    expect(await raw.json()).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: expect.any(Object) } });
  });
});

describe('closing the gateway', () => {
  it('ends every stdio server process', async () => {
    const pid = (await server('local')).pid!;
    expect(alive(pid)).toBe(true);
    stopped = true;
    await tg.stop();
    await until('the stdio server process gone', async () => !alive(pid), 5_000);
  });
});
