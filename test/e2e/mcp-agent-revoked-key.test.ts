import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// An agent run (MCP agent mode) calls the model again after each tool call, on the key's authority and at its
// cost. Each turn already met the key's budget as stored at that moment (a budget lowered mid-run stops it), but a
// key disabled, expired or deleted mid-run went on paying for turns until the run ended. Each further turn now
// checks that the key is still live, as a new request would.

/** An MCP server whose one tool answers when the test says so. */
async function startGatedServer() {
  let open: () => void = () => undefined;
  let gate = new Promise<void>((resolve) => (open = resolve));
  let entered: () => void = () => undefined;
  let waiting = new Promise<void>((resolve) => (entered = resolve));
  const build = (): McpServer => {
    const server = new McpServer({ name: 'gated', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => {
      entered();
      await gate;
      return { content: [{ type: 'text', text: `found: ${query}` }] };
    });
    return server;
  };
  const served = await serveMcpOverHttp(build);
  return {
    ...served,
    /** Resolves once the tool is running (the first turn asked for it). */
    called: () => waiting,
    release: () => open(),
    reset: () => {
      gate = new Promise<void>((resolve) => (open = resolve));
      waiting = new Promise<void>((resolve) => (entered = resolve));
    },
  };
}

let upstream: ScriptedUpstream;
let mcp: Awaited<ReturnType<typeof startGatedServer>>;
let tg: RunningGateway;
const { api, createKey } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  mcp = await startGatedServer();
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { gated: { type: 'http', url: mcp.url } }, call_timeout_ms: 10_000 },
    routes: { agent: { targets: [{ model: 'openai/gpt-4o-mini' }], mcp: { servers: ['gated'], mode: 'auto' } } },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const health = (await (await fetch(`${tg.url}/api/mcp`)).json()) as { servers: Array<{ name: string; state: string; tools: number }> };
    if (health.servers.some((server) => server.name === 'gated' && server.state === 'ready' && server.tools >= 1)) break;
    await new Promise((done) => setTimeout(done, 50));
  }
});
afterAll(async () => {
  mcp?.release();
  await tg?.stop();
  await mcp?.close();
  await upstream?.close();
});

describe('a key revoked during an agent run', () => {
  for (const [what, revoke, code] of [
    ['disabled', (id: string) => api('PATCH', `/api/keys/${id}`, { disabled: true }), 'key_disabled'],
    ['expired', (id: string) => api('PATCH', `/api/keys/${id}`, { expires_at: new Date(Date.now() - 1_000).toISOString() }), 'key_expired'],
    ['deleted', (id: string) => api('DELETE', `/api/keys/${id}`), 'invalid_api_key'],
  ] as const) {
    it(`${what} while a tool runs: the run makes no further model call and ends with the key's 401`, async () => {
      upstream.reset();
      mcp.reset();
      const { id, key } = await createKey({ name: `agent-${what}` });
      const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0 });
      const run = client.chat.completions.create({ model: 'agent', messages: [{ role: 'user', content: 'pluto' }] }).then(
        () => null,
        (err: unknown) => err as InstanceType<typeof OpenAI.APIError>,
      );
      // The first turn asked for the tool, which now waits: revoke the key, then let the tool answer.
      await mcp.called();
      expect(upstream.calls).toHaveLength(1);
      expect((await revoke(id)).status).toBeLessThan(300);
      mcp.release();
      const error = await run;
      expect(upstream.calls).toHaveLength(1);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect(error).toMatchObject({ status: 401, code });
    });
  }
});
