import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { serveMcpOverHttp } from '../helpers/mcp-http.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The servers a key or team attaches to every chat request (`mcp.servers`) must be ones its own `mcp.allow` (and, for
 * a key, its team's) lets it ask for. Before, such a key was taken and every chat request it sent was a 403
 * `mcp_tool_not_allowed`; it is now a 400 naming the server when the key or team is written.
 */

let upstream: ScriptedUpstream;
const servers: Array<{ url: string; close(): Promise<void> }> = [];
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

function toolServer(name: string): McpServer {
  const server = new McpServer({ name, version: '1.0.0' });
  server.registerTool('lookup', { description: `Looks a topic up in ${name}`, inputSchema: { query: z.string() } }, async ({ query }) => ({ content: [{ type: 'text', text: query }] }));
  return server;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  servers.push(await serveMcpOverHttp(() => toolServer('kb')), await serveMcpOverHttp(() => toolServer('docs')));
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    mcp: { servers: { kb: { type: 'http', url: servers[0]!.url }, docs: { type: 'http', url: servers[1]!.url } } },
  });
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && ((await api('GET', '/api/mcp')).body.tools as unknown[]).length < 2) await new Promise((done) => setTimeout(done, 50));
});
afterAll(async () => {
  await tg?.stop();
  for (const server of servers) await server.close();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

async function refused(method: string, path: string, body: Record<string, unknown>): Promise<{ param: string; message: string }> {
  const answer = await api(method, path, body);
  expect(answer.status).toBe(400);
  expect(answer.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_value' });
  return answer.body.error;
}

function offeredTools(): string[] {
  const tools = upstream.calls.at(-1)?.body.tools as Array<{ function: { name: string } }> | undefined;
  return (tools ?? []).map((tool) => tool.function.name).sort();
}

const HI = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hi' }] };

describe('servers a policy attaches must be servers it allows', () => {
  it("refuses a key whose mcp.servers names a server its own mcp.allow does not, on create and on update", async () => {
    const created = await refused('POST', '/api/keys', { name: 'mismatch', mcp: { servers: ['docs'], allow: ['kb__lookup'] } });
    expect(created.param).toBe('mcp.servers.0');
    expect(created.message).toContain("'docs'");
    expect((await api('GET', '/api/keys?q=mismatch')).body.data).toEqual([]);

    // Allowed: the server itself, one of its tools, or no list at all.
    const fine = await createKey({ name: 'fine', mcp: { servers: ['kb'], allow: ['kb__lookup'] } });
    await clientFor(fine.key).chat.completions.create(HI);
    expect(offeredTools()).toEqual(['kb__lookup']);
    expect((await refused('PATCH', `/api/keys/${fine.id}`, { mcp: { servers: ['kb', 'docs'], allow: ['kb'] } })).param).toBe('mcp.servers.1');
    expect((await api('GET', `/api/keys/${fine.id}`)).body.mcp).toEqual({ servers: ['kb'], allow: ['kb__lookup'] });
    const open = await createKey({ name: 'open', mcp: { servers: ['docs'] } });
    await clientFor(open.key).chat.completions.create(HI);
    expect(offeredTools()).toEqual(['docs__lookup']);
  });

  it("refuses a key whose servers its team's mcp.allow does not allow, also when the key moves to that team", async () => {
    const team = await api('POST', '/api/teams', { name: 'kb-only', mcp: { allow: ['kb'] } });
    expect(team.status).toBe(201);
    const teamId = team.body.id as string;
    const inTeam = await refused('POST', '/api/keys', { name: 'docs-in-team', team: teamId, mcp: { servers: ['docs'] } });
    expect(inTeam.param).toBe('mcp.servers.0');
    expect(inTeam.message).toContain(`team '${teamId}'`);

    const loose = await createKey({ name: 'docs-loose', mcp: { servers: ['docs'] } });
    expect((await refused('PATCH', `/api/keys/${loose.id}`, { team: teamId })).param).toBe('mcp.servers.0');
    expect((await api('GET', `/api/keys/${loose.id}`)).body.team).toBeNull();
    // The key keeps working as it was.
    await clientFor(loose.key).chat.completions.create(HI);
    expect(offeredTools()).toEqual(['docs__lookup']);
  });

  it("refuses a team whose mcp.servers names a server its own mcp.allow does not", async () => {
    expect((await refused('POST', '/api/teams', { name: 'mismatched-team', mcp: { servers: ['docs'], allow: ['kb__lookup'] } })).param).toBe('mcp.servers.0');
    const team = await api('POST', '/api/teams', { name: 'docs-team', mcp: { servers: ['docs'] } });
    expect(team.status).toBe(201);
    expect((await refused('PATCH', `/api/teams/${team.body.id}`, { mcp: { servers: ['docs'], allow: ['kb'] } })).param).toBe('mcp.servers.0');
    expect((await api('GET', `/api/teams/${team.body.id}`)).body.mcp).toEqual({ servers: ['docs'] });
  });
});
