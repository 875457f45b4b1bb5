import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A route's `mcp.allow` (and `mcp.servers`) names configured MCP servers, checked when the config is loaded or changed
 * (a typo is a 400 naming the entry, not a list that silently matches nothing), and it narrows the tools of the
 * route's requests at each request, as a key's list does.
 */

let upstream: ScriptedUpstream;
let kb: { url: string; close(): Promise<void> };
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);
const target = (): { targets: Array<{ model: string }> } => ({ targets: [{ model: 'openai/gpt-4o-mini' }] });
const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  kb = await serveMcpOverHttp(() => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => ({ content: [{ type: 'text', text: query }] }));
    server.registerTool('secret', { description: 'Not for everyone', inputSchema: { query: z.string() } }, async () => ({ content: [{ type: 'text', text: 'the secret' }] }));
    return server;
  });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { kb: { type: 'http', url: kb.url } } },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await api('GET', '/api/mcp')).body.tools as unknown[]).length < 2) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

function offeredTools(): string[] {
  const tools = upstream.calls.at(-1)?.body.tools as Array<{ function: { name: string } }> | undefined;
  return (tools ?? []).map((tool) => tool.function.name).sort();
}

describe("a route's mcp.allow and mcp.servers in PATCH /api/config", () => {
  it('is a 400 naming the entry whose server is not configured, and the config stays as it was', async () => {
    const typo = await api('PATCH', '/api/config', { routes: { desk: { ...target(), mcp: { servers: ['kb'], allow: ['kb', 'kbb__lookup'] } } } });
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({ code: 'invalid_config', param: 'routes.desk.mcp.allow.1' });
    expect(typo.body.error.message).toContain('"kbb__lookup" names the MCP server "kbb", which is not configured (did you mean "kb__lookup"?)');

    const server = await api('PATCH', '/api/config', { routes: { desk: { ...target(), mcp: { servers: ['kbx'] } } } });
    expect(server.status).toBe(400);
    expect(server.body.error).toMatchObject({ code: 'invalid_config', param: 'routes.desk.mcp.servers.0' });
    // A server the route attaches but its own list refuses: every request of the route was a 403.
    const refusedByOwnList = await api('PATCH', '/api/config', { routes: { desk: { ...target(), mcp: { servers: ['kb'], allow: [] } } } });
    expect(refusedByOwnList.status).toBe(400);
    expect(refusedByOwnList.body.error).toMatchObject({ code: 'invalid_config', param: 'routes.desk.mcp.servers.0' });
    expect((await api('GET', '/api/config?layer=api')).body.routes?.desk).toBeUndefined();
  });

  it('refuses dropping a server a route still names', async () => {
    expect((await api('PATCH', '/api/config', { routes: { held: { ...target(), mcp: { allow: ['kb__lookup'] } } } })).status).toBe(200);
    const dropped = await api('PATCH', '/api/config', { mcp: { servers: { kb: null } } });
    expect(dropped.status).toBe(400);
    expect(dropped.body.error.param).toBe('routes.held.mcp.allow.0');
    expect((await api('PATCH', '/api/config', { routes: { held: null } })).status).toBe(200);
  });
});

describe("a route's mcp.allow at a request", () => {
  it("offers only the tools the route allows, and refuses a server outside it with a 403", async () => {
    expect((await api('PATCH', '/api/config', { routes: { narrow: { ...target(), mcp: { servers: ['kb'], allow: ['kb__lookup'] } }, closed: { ...target(), mcp: { allow: [] } } } })).status).toBe(200);
    const key = await createKey({ name: 'open-key' });
    await clientFor(key.key).chat.completions.create({ model: 'narrow', messages: hi });
    expect(offeredTools()).toEqual(['kb__lookup']);
    // The same key on a route without a list gets every tool.
    await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, { headers: { 'x-tollgate-mcp': 'kb' } });
    expect(offeredTools()).toEqual(['kb__lookup', 'kb__secret']);

    const denied = await clientFor(key.key).chat.completions.create({ model: 'closed', messages: hi }, { headers: { 'x-tollgate-mcp': 'kb' } }).catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied).toMatchObject({ code: 'mcp_tool_not_allowed', param: 'x-tollgate-mcp' });
  });
});

describe('a config file whose route names an unknown MCP server', () => {
  it('does not start, naming the entry', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-mcp-audit-'));
    try {
      const started = startGateway(
        { providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } }, mcp: { servers: { kb: { type: 'http', url: kb.url } } }, routes: { desk: { ...target(), mcp: { allow: ['docs'] } } } },
        {},
        { dataDir },
      );
      // A gateway that started anyway is stopped, not left running.
      const failure = await started.then(
        (running) => running.stop().then(() => null),
        (err: unknown) => err,
      );
      expect(String(failure)).toMatch(/routes\.desk\.mcp\.allow\.0: "docs" names the MCP server "docs", which is not configured/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
