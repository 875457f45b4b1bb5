import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

/**
 * An MCP server's configured secrets (its token, its header values) never reach a caller in a failed tool call's
 * error, even when the server echoes them back in its error: an HTTP error body (the SDK quotes it in its message)
 * or a JSON-RPC error's message. A virtual key's holder is not the operator who configured the server.
 */

const TOKEN = 'tok-DISTINCTIVE-93f1c2';
const HEADER = 'hdr-DISTINCTIVE-5ab7e0';

let mcp: Server;
let url: string;
let tg: RunningGateway;
const { api, createKey } = gatewayApi(() => tg.url);

beforeAll(async () => {
  // The SDK serves the handshake and the tool list; a tool call is answered with the credentials it came with.
  mcp = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const echoed = `refused: authorization=${req.headers.authorization} x-tenant-key=${String(req.headers['x-tenant-key'])}`;
      if (body?.method === 'tools/call' && body.params?.name === 'http_error') {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(echoed);
        return;
      }
      if (body?.method === 'tools/call' && body.params?.name === 'rpc_error') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: { code: -32603, message: echoed } }));
        return;
      }
      const server = new McpServer({ name: 'echoing', version: '1.0.0' });
      for (const name of ['http_error', 'rpc_error']) server.registerTool(name, { inputSchema: { query: z.string() } }, async () => ({ content: [] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      void server.connect(transport).then(() => transport.handleRequest(req, res, body));
    });
  });
  await new Promise<void>((done) => mcp.listen(0, '127.0.0.1', done));
  url = `http://127.0.0.1:${(mcp.address() as AddressInfo).port}/mcp`;
  tg = await startGateway({ mcp: { servers: { echo: { type: 'http', url, token: TOKEN, headers: { 'x-tenant-key': HEADER } } } } });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await api('GET', '/api/mcp')).body.tools as unknown[]).length < 2) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  mcp?.closeAllConnections();
  await new Promise<void>((done) => (mcp ? mcp.close(() => done()) : done()));
});

async function waitReady(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && (await api('GET', '/api/mcp')).body.servers[0]?.state !== 'ready') await new Promise((done) => setTimeout(done, 50));
}

describe("a failed tool call's error", () => {
  it.each(['http_error', 'rpc_error'])('of %s keeps the server\'s token and header values out of the answer and the call log', async (tool) => {
    await waitReady();
    const key = await createKey({ name: `caller-${tool}` });
    const answer = await fetch(`${tg.url}/v1/mcp/tools/call`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
      body: JSON.stringify({ name: `echo__${tool}`, arguments: { query: 'x' } }),
    });
    const text = await answer.text();
    expect(answer.status).toBe(502);
    // The server did answer with them (the error is there), only the secrets are replaced.
    expect(text).toContain('refused: authorization=Bearer [REDACTED]');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(HEADER);
    // The call log is written after the answer (in the background): on a loaded machine it may not hold it yet.
    let calls = '';
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((done) => setTimeout(done, 50))) {
      calls = JSON.stringify((await api('GET', `/api/mcp/calls?key_id=${key.id}`)).body);
      if (calls.includes('refused')) break;
    }
    expect(calls).toContain('refused');
    expect(calls).not.toContain(TOKEN);
    expect(calls).not.toContain(HEADER);
  });
});
