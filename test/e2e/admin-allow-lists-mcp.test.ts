import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A key's and a team's `mcp.allow` (`server`, `server__tool`, `server__*`) is checked against the running config when
 * written: an entry whose server is not a configured MCP server matched no tool, so it is a 400 naming it, as an
 * unknown name in `mcp.servers` is. A tool's name is not checked (a server's tools are what it offers while it
 * runs); an empty list allows no tool.
 */

let upstream: ScriptedUpstream;
let kb: { url: string; close(): Promise<void> };
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);
const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];
const KB = { headers: { 'x-tollgate-mcp': 'kb' } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  const build = (): McpServer => {
    const server = new McpServer({ name: 'kb', version: '1.0.0' });
    server.registerTool('lookup', { description: 'Looks a topic up', inputSchema: { query: z.string() } }, async ({ query }) => ({ content: [{ type: 'text', text: `found: ${query}` }] }));
    server.registerTool('secret', { description: 'Not for everyone', inputSchema: { query: z.string() } }, async () => ({ content: [{ type: 'text', text: 'the secret' }] }));
    return server;
  };
  kb = await serveMcpOverHttp(build);
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
  // Through the API, so a test can drop one again: `kb` serves, `notes` is configured but disabled (never connected).
  const added = await api('PATCH', '/api/config', {
    mcp: { servers: { kb: { type: 'http', url: kb.url }, notes: { type: 'http', url: 'http://127.0.0.1:9/mcp', disabled: true } } },
  });
  expect(added.status).toBe(200);
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await api('GET', '/api/mcp')).body.tools as unknown[]).length < 2) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  await kb?.close();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

async function refused(method: string, path: string, body: Record<string, unknown>): Promise<{ param: string; message: string }> {
  const answer = await api(method, path, body);
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value' });
  return answer.body.error;
}

/** The MCP tools the upstream was offered on the last call. */
function offeredTools(): string[] {
  const tools = upstream.calls.at(-1)?.body.tools as Array<{ function: { name: string } }> | undefined;
  return (tools ?? []).map((tool) => tool.function.name);
}

describe("a key's mcp.allow naming an MCP server the config does not have", () => {
  it('is a 400 naming the entry and the server meant, on create and on update; the right name is taken and offers the tool', async () => {
    const typo = await refused('POST', '/api/keys', { name: 'typo', mcp: { allow: ['kb', 'kbb__lookup'] } });
    expect(typo.param).toBe('mcp.allow.1');
    expect(typo.message).toContain("Invalid 'mcp.allow.1': 'kbb__lookup' names the MCP server 'kbb', which is not configured (did you mean 'kb__lookup'?); the configured MCP servers are 'kb', 'notes'");
    expect((await refused('POST', '/api/keys', { name: 'server', mcp: { allow: ['tickets'] } })).message).toContain("'tickets' is not a configured MCP server");
    expect((await refused('POST', '/api/keys', { name: 'pattern', mcp: { allow: ['tickets__*'] } })).param).toBe('mcp.allow.0');
    expect((await api('GET', '/api/keys')).body.data).toEqual([]);

    const key = await createKey({ name: 'narrow', mcp: { allow: ['kb__lookup'] } });
    expect((await refused('PATCH', `/api/keys/${key.id}`, { mcp: { allow: ['kbb__lookup'] } })).param).toBe('mcp.allow.0');
    expect((await api('GET', `/api/keys/${key.id}`)).body.mcp).toEqual({ allow: ['kb__lookup'] });

    const answer = await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, KB);
    expect(answer.choices).toHaveLength(1);
    expect(offeredTools()).toEqual(['kb__lookup']);
  });

  it('takes a disabled server, a pattern and a tool its server does not offer now, and an empty list, which allows none', async () => {
    expect((await refused('POST', '/api/keys', { name: 'none-by-typo', mcp: { allow: ['nowhere'] } })).message).toContain('An empty list ("allow": []) allows no tool.');
    const open = await createKey({ name: 'open', mcp: { allow: ['kb__*', 'notes', 'kb__not-yet'] } });
    await clientFor(open.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, KB);
    expect(offeredTools().sort()).toEqual(['kb__lookup', 'kb__secret']);

    const none = await createKey({ name: 'none', mcp: { allow: [] } });
    const denied = await clientFor(none.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, KB).catch((err: unknown) => err);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied).toMatchObject({ code: 'mcp_tool_not_allowed' });
  });
});

describe("a team's mcp.allow", () => {
  it('is checked the same way, on create and on update, and a team allowed a tool lets its key use it', async () => {
    expect((await refused('POST', '/api/teams', { name: 'team-typo', mcp: { allow: ['kbb'] } })).param).toBe('mcp.allow.0');
    const team = await api('POST', '/api/teams', { name: 'team', mcp: { allow: ['kb__lookup'] } });
    expect(team.status).toBe(201);
    expect((await refused('PATCH', `/api/teams/${team.body.id}`, { mcp: { allow: ['kb', 'kbb__*'] } })).param).toBe('mcp.allow.1');
    expect((await api('GET', `/api/teams/${team.body.id}`)).body.mcp).toEqual({ allow: ['kb__lookup'] });

    const key = await createKey({ name: 'in-team', team: team.body.id });
    await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, KB);
    expect(offeredTools()).toEqual(['kb__lookup']);
  });
});

describe('an allow-list whose server the config later drops', () => {
  it('leaves the key working without it: its tool is simply gone, and writing the list again is checked', async () => {
    const key = await createKey({ name: 'kept', mcp: { allow: ['kb', 'notes'] } });
    expect((await api('PATCH', '/api/config', { mcp: { servers: { notes: null } } })).status).toBe(200);
    const answer = await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, KB);
    expect(answer.choices).toHaveLength(1);
    expect(offeredTools().sort()).toEqual(['kb__lookup', 'kb__secret']);
    // Asking for the dropped server is the unknown server's 400, as for any key.
    const unknown = await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi }, { headers: { 'x-tollgate-mcp': 'notes' } }).catch((err: unknown) => err);
    expect(unknown).toMatchObject({ status: 400, param: 'x-tollgate-mcp' });
    expect((await api('GET', `/api/keys/${key.id}`)).body.mcp).toEqual({ allow: ['kb', 'notes'] });
    expect((await api('PATCH', `/api/keys/${key.id}`, { name: 'kept-renamed' })).status).toBe(200);
    expect((await refused('PATCH', `/api/keys/${key.id}`, { mcp: { allow: ['kb', 'notes'] } })).param).toBe('mcp.allow.1');
  });
});
