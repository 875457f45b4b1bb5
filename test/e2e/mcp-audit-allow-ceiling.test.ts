import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A team's `mcp.allow` is the ceiling of its keys' lists. At a request a tool must pass both lists; when a key's list
 * is written (create, update, or a move to another team) an entry its team does not allow is a 400 naming it, rather
 * than a list taken without a word whose entries silently match nothing.
 */

let upstream: ScriptedUpstream;
let kb: { url: string; close(): Promise<void> };
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);
const KB = { headers: { 'x-tollgate-mcp': 'kb' } };

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

async function refused(method: string, path: string, body: Record<string, unknown>): Promise<{ param: string; message: string }> {
  const answer = await api(method, path, body);
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value' });
  return answer.body.error;
}

describe("a key's mcp.allow under its team's", () => {
  it('refuses an entry past the team list on create, on update and on a move to the team, naming it', async () => {
    const team = await api('POST', '/api/teams', { name: 'support', mcp: { allow: ['kb__lookup'] } });
    expect(team.status).toBe(201);
    const teamId = team.body.id as string;

    const tool = await refused('POST', '/api/keys', { name: 'wide', team: teamId, mcp: { allow: ['kb__lookup', 'kb__secret'] } });
    expect(tool.param).toBe('mcp.allow.1');
    expect(tool.message).toContain("'kb__secret' allows more than the key's team");
    expect(tool.message).toContain("'kb__lookup'");
    // The whole server (or its pattern) is more than one of its tools.
    expect((await refused('POST', '/api/keys', { name: 'server', team: teamId, mcp: { allow: ['kb'] } })).param).toBe('mcp.allow.0');
    expect((await refused('POST', '/api/keys', { name: 'pattern', team: teamId, mcp: { allow: ['kb__*'] } })).param).toBe('mcp.allow.0');

    // Within the ceiling: taken, and the key gets exactly that tool.
    const inside = await createKey({ name: 'inside', team: teamId, mcp: { allow: ['kb__lookup'] } });
    expect((await refused('PATCH', `/api/keys/${inside.id}`, { mcp: { allow: ['kb__secret'] } })).param).toBe('mcp.allow.0');
    expect((await api('GET', `/api/keys/${inside.id}`)).body.mcp).toEqual({ allow: ['kb__lookup'] });
    await clientFor(inside.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, KB);
    expect(offeredTools()).toEqual(['kb__lookup']);

    // A key of no team may have any list; moving it into the team checks that list against the team's.
    const loose = await createKey({ name: 'loose', mcp: { allow: ['kb__secret'] } });
    expect((await refused('PATCH', `/api/keys/${loose.id}`, { team: teamId })).param).toBe('mcp.allow.0');
    expect((await api('GET', `/api/keys/${loose.id}`)).body.team).toBeNull();
    // Without a list of its own the key uses what its team allows.
    expect((await api('PATCH', `/api/keys/${loose.id}`, { team: teamId, mcp: null })).status).toBe(200);
  });

  it('takes any entry under a team that allows the whole server, and a team narrowed later still caps the key at each request', async () => {
    const team = await api('POST', '/api/teams', { name: 'research', mcp: { allow: ['kb__*'] } });
    const key = await createKey({ name: 'research-key', team: team.body.id, mcp: { allow: ['kb__secret'] } });
    await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, KB);
    expect(offeredTools()).toEqual(['kb__secret']);

    // The team's change is not refused for its keys' sake: the key's entry past it just matches nothing any more.
    expect((await api('PATCH', `/api/teams/${team.body.id}`, { mcp: { allow: ['kb__lookup'] } })).status).toBe(200);
    await clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }, KB);
    expect(offeredTools()).toEqual([]);
  });
});
