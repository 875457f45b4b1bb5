import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// A stateful streamable HTTP MCP server (sessions, as most hosted ones are) forgets a session when it restarts or
// the session idles out, and answers a request on it with 404. The MCP spec (2025-06-18, "Session Management"):
// "When a client receives HTTP 404 in response to a request containing an Mcp-Session-Id, it MUST start a new
// session by sending a new InitializeRequest without a session ID attached." The request it refused never ran.

interface StatefulServer {
  url: string;
  calls: string[];
  /** Sessions opened so far. */
  sessions(): number;
  /** Sessions their client ended (DELETE). */
  ended: string[];
  /** Forgets every session (a restart, an idle timeout). */
  expire(): Promise<void>;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined));
  });
}

async function startStatefulServer(): Promise<StatefulServer> {
  const live = new Map<string, StreamableHTTPServerTransport>();
  const calls: string[] = [];
  const ended: string[] = [];
  let opened = 0;
  const http: Server = createServer((req, res) => {
    void (async () => {
      const body = req.method === 'POST' ? await readBody(req) : undefined;
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string') {
        const transport = live.get(id);
        if (!transport) {
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
          return;
        }
        await transport.handleRequest(req, res, body);
        return;
      }
      const server = new McpServer({ name: 'stateful', version: '1.0.0' });
      server.registerTool('echo', { description: 'Echoes', inputSchema: { text: z.string() } }, async ({ text }) => {
        calls.push(text);
        return { content: [{ type: 'text', text: `echo ${text}` }] };
      });
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (session) => {
          opened++;
          live.set(session, transport);
        },
        onsessionclosed: (session) => {
          ended.push(session);
          live.delete(session);
        },
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    })();
  });
  await new Promise<void>((done) => http.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    calls,
    ended,
    sessions: () => opened,
    expire: async () => {
      const transports = [...live.values()];
      live.clear();
      await Promise.all(transports.map((transport) => transport.close()));
    },
    close: () =>
      new Promise<void>((done) => {
        http.closeAllConnections();
        http.close(() => done());
      }),
  };
}

let stateful: StatefulServer;
let tg: RunningGateway;

async function mcpState(): Promise<string | undefined> {
  const view = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string }> };
  return view.servers.find((server) => server.name === 'notes')?.state;
}

beforeAll(async () => {
  stateful = await startStatefulServer();
  tg = await startGateway({ mcp: { servers: { notes: { type: 'http', url: stateful.url } } } });
  const deadline = Date.now() + 10_000;
  while ((await mcpState()) !== 'ready') {
    if (Date.now() > deadline) throw new Error('the server never became ready');
    await new Promise((done) => setTimeout(done, 50));
  }
});
afterAll(async () => {
  await tg?.stop();
  await stateful?.close();
});

const call = async (text: string): Promise<{ status: number; body: Record<string, any> }> => {
  const res = await fetch(`${tg.url}/v1/mcp/tools/call`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'notes__echo', arguments: { text } }) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

describe('a stateful HTTP MCP server that forgot its session', () => {
  it('gets a new session and the call it refused, once, instead of failing it', async () => {
    expect(await call('one')).toMatchObject({ status: 200, body: { text: 'echo one' } });
    expect(stateful.sessions()).toBe(1);
    await stateful.expire();

    // Calls at once share the new session.
    const [two, three] = await Promise.all([call('two'), call('three')]);
    expect(two).toMatchObject({ status: 200, body: { text: 'echo two' } });
    expect(three).toMatchObject({ status: 200, body: { text: 'echo three' } });
    expect(stateful.calls).toEqual(['one', 'two', 'three']);
    expect(stateful.sessions()).toBe(2);
    expect(await mcpState()).toBe('ready');
  });

  it('ends its session when the server is closed (config change, shutdown), as the spec asks of a client done with one', async () => {
    // A session may hold what the server keeps for it (a browser, a transaction) until it is ended or times out.
    const opened = stateful.sessions();
    const other = await startGateway({ mcp: { servers: { notes: { type: 'http', url: stateful.url } } } });
    const deadline = Date.now() + 10_000;
    // Opened on the server's side and ready on the gateway's (it has the session's id): under load the server counted
    // the session before the gateway had read the answer that names it, and a stop then had no session to end.
    const ready = async (): Promise<boolean> => {
      const view = (await (await fetch(`${other.url}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string }> };
      return view.servers.find((server) => server.name === 'notes')?.state === 'ready';
    };
    while (stateful.sessions() === opened || !(await ready())) {
      if (Date.now() > deadline) throw new Error('no session opened');
      await new Promise((done) => setTimeout(done, 20));
    }
    await other.stop();
    expect(stateful.ended).toHaveLength(1);
  });
});
