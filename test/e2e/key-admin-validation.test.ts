import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * What the keys and teams API accepts, and what it keeps: per-model limits that would limit nothing (a pattern, a
 * misspelt provider) are refused instead of stored, as are MCP servers (`mcp.servers`) the config does not have; a
 * changed budget period keeps the spend already made (it used to start at zero, so the key could spend its budget
 * again); the listings refuse parameters they do not take (they used to answer every key); and ids repeated in
 * errors are cut as other repeated values are.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.parse('2027-03-10T12:00:00.000Z');
const { api, createKey, clientFor } = gatewayApi(() => tg.url);
/** $1 a token, in and out. */
const PRICES = { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway(
    {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
    },
    {},
    { clock: () => now },
  );
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

describe('model_rate_limits that would limit nothing', () => {
  it.each([[{ 'openai/*': 1 }], [{ '*': 1 }]])('refuses the pattern %j with a 400 that says patterns are not supported', async (limits) => {
    const created = await api('POST', '/api/keys', { name: 'pattern', model_rate_limits: limits });
    expect(created.status).toBe(400);
    expect(created.body.error.message).toMatch(/'\*' patterns are not supported/);
  });

  it('refuses a provider no config has, naming it, on create and on update', async () => {
    const created = await api('POST', '/api/keys', { name: 'typo', model_rate_limits: { 'opnai/gpt-4o': 1 } });
    expect(created.status).toBe(400);
    expect(created.body.error.message).toMatch(/'opnai\/gpt-4o' names no configured provider 'opnai'/);
    const key = await createKey({ name: 'typo-later' });
    const patched = await api('PATCH', `/api/keys/${key.id}`, { model_rate_limits: { 'opnai/gpt-4o': 1 } });
    expect(patched.status).toBe(400);
  });

  it('still takes a model of a configured provider, and it limits', async () => {
    const key = await createKey({ name: 'limited', model_rate_limits: { 'openai/gpt-4o': 1 } });
    const client = clientFor(key.key);
    await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    const refused = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }).catch((err: unknown) => err);
    expect((refused as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
  });
});

describe('a changed budget_period', () => {
  async function keyThatSpent(): Promise<{ id: string; spend: number; total: number }> {
    // Spends in February, then in March: the monthly spend is March's, the total both.
    now = Date.parse('2027-02-20T12:00:00.000Z');
    const key = await createKey({ name: 'period', budget: 1_000, budget_period: 'monthly' });
    const client = clientFor(key.key);
    const ask = (): Promise<unknown> => client.chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    await ask();
    now = Date.parse('2027-03-10T12:00:00.000Z');
    await ask();
    const view = (await api('GET', `/api/keys/${key.id}`)).body;
    expect(view.spend).toBeGreaterThan(0);
    expect(view.total_spend).toBeGreaterThan(view.spend);
    return { id: key.id, spend: view.spend, total: view.total_spend };
  }

  it('to total carries the whole life spend, so the total budget is not whole again', async () => {
    const key = await keyThatSpent();
    const patched = await api('PATCH', `/api/keys/${key.id}`, { budget_period: 'total' });
    expect(patched.status).toBe(200);
    expect(patched.body.spend).toBe(key.total);
  });

  it('to a shorter period keeps the current spend (the safe side), never zero', async () => {
    const key = await keyThatSpent();
    const patched = await api('PATCH', `/api/keys/${key.id}`, { budget_period: 'daily' });
    expect(patched.body.spend).toBe(key.spend);
    expect(patched.body.period_resets_at).toBe('2027-03-11T00:00:00.000Z');
  });

  it("a team's keeps its current spend too", async () => {
    now = Date.parse('2027-03-10T12:00:00.000Z');
    const team = (await api('POST', '/api/teams', { name: 'period-team', budget: 1_000, budget_period: 'monthly' })).body;
    const key = await createKey({ name: 'in-team', team: team.id });
    await clientFor(key.key).chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    const spent = (await api('GET', `/api/teams/${team.id}`)).body.spend;
    expect(spent).toBeGreaterThan(0);
    const patched = await api('PATCH', `/api/teams/${team.id}`, { budget_period: 'total' });
    expect(patched.body.spend).toBe(spent);
  });
});

describe('the listings of keys and teams', () => {
  it.each(['?team=t_1', '?limt=1', '?name=other'])('GET /api/keys%s is a 400 naming the parameter', async (query) => {
    const answer = await api('GET', `/api/keys${query}`);
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('invalid_query');
    expect(answer.body.error.message).toContain(`'${query.slice(1, query.indexOf('='))}'`);
  });

  it('GET /api/keys still takes its own parameters, and a limit that is no number is a 400', async () => {
    expect((await api('GET', '/api/keys?limit=2&q=')).status).toBe(200);
    expect((await api('GET', '/api/keys?limit=abc')).status).toBe(400);
  });

  it('GET /api/teams takes none', async () => {
    expect((await api('GET', '/api/teams')).status).toBe(200);
    const answer = await api('GET', '/api/teams?limit=abc');
    expect(answer.status).toBe(400);
    expect(answer.body.error.code).toBe('invalid_query');
  });
});

describe('ids repeated in errors', () => {
  it('are cut to 200 characters, as other repeated values are', async () => {
    const long = 't'.repeat(3_000);
    const created = await api('POST', '/api/keys', { name: 'long-team', team: long });
    expect(created.status).toBe(400);
    expect(created.body.error.message.length).toBeLessThan(400);
    expect(created.body.error.message).toContain('(3000 characters)');
    const key = await createKey({ name: 'moved-to-long-team' });
    const patched = await api('PATCH', `/api/keys/${key.id}`, { team: long });
    expect(patched.status).toBe(400);
    expect(patched.body.error.message).toContain('(3000 characters)');
  });
});

describe('mcp.servers naming no configured MCP server', () => {
  /** A gateway of its own, with two MCP servers (disabled: configured, never connected to). */
  let mcpTg: RunningGateway;
  const mcpApi = gatewayApi(() => mcpTg.url);
  const server = { type: 'http', url: 'http://127.0.0.1:9/mcp', disabled: true } as const;

  beforeAll(async () => {
    mcpTg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } });
    const added = await mcpApi.api('PATCH', '/api/config', { mcp: { servers: { notes: server, docs: server } } });
    expect(added.status).toBe(200);
  });
  afterAll(async () => {
    await mcpTg?.stop();
  });

  it('refuses an unknown server on create and on update with a 400 naming the field and the name', async () => {
    const created = await mcpApi.api('POST', '/api/keys', { name: 'typo', mcp: { servers: ['notes', 'nots'] } });
    expect(created.status).toBe(400);
    expect(created.body.error).toMatchObject({ code: 'invalid_value', param: 'mcp.servers.1' });
    expect(created.body.error.message).toMatch(/'mcp\.servers\.1': 'nots' is not a configured MCP server \(the configured MCP servers are 'notes', 'docs'\)/);
    // A long name is cut in the message, as other repeated values are.
    const long = await mcpApi.api('POST', '/api/keys', { name: 'long', mcp: { servers: ['x'.repeat(10_000)] } });
    expect(long.status).toBe(400);
    expect(long.body.error.message).toContain(`'${'x'.repeat(64)}… (10000 characters)'`);
    expect((await mcpApi.api('GET', '/api/keys')).body.data).toEqual([]);

    const key = await mcpApi.createKey({ name: 'later' });
    const patched = await mcpApi.api('PATCH', `/api/keys/${key.id}`, { mcp: { servers: ['nowhere'] } });
    expect(patched.status).toBe(400);
    expect(patched.body.error).toMatchObject({ param: 'mcp.servers.0' });
    expect(patched.body.error.message).toContain("'nowhere'");
    expect((await mcpApi.api('GET', `/api/keys/${key.id}`)).body.mcp).toBeNull();
    // A team's list is checked the same way.
    const team = await mcpApi.api('POST', '/api/teams', { name: 'team-typo', mcp: { servers: ['nots'] } });
    expect(team.status).toBe(400);
    expect(team.body.error).toMatchObject({ param: 'mcp.servers.0' });
  });

  it('takes configured servers (and an allow-list naming configured servers; admin-allow-lists-mcp checks that list)', async () => {
    const created = await mcpApi.api('POST', '/api/keys', { name: 'known', mcp: { servers: ['notes', 'docs'], allow: ['notes', 'docs__tool'] } });
    expect(created.status).toBe(201);
    expect(created.body.mcp).toEqual({ servers: ['notes', 'docs'], allow: ['notes', 'docs__tool'] });
    expect((await mcpApi.api('PATCH', `/api/keys/${created.body.id}`, { mcp: { servers: ['docs'] } })).status).toBe(200);
    expect((await mcpApi.api('POST', '/api/teams', { name: 'team-known', mcp: { servers: ['docs'] } })).status).toBe(201);
  });

  it('leaves a key naming a server the config drops later working: only new writes are checked', async () => {
    const key = await mcpApi.createKey({ name: 'kept', mcp: { servers: ['notes'] } });
    expect((await mcpApi.api('PATCH', '/api/config', { mcp: { servers: { notes: null } } })).status).toBe(200);
    // Its calls go on, without the dropped server (they were each a 400, unknown MCP server), while 'docs' is still there.
    const answer = await mcpApi.clientFor(key.key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    expect(answer.choices).toHaveLength(1);
    expect(upstream.calls.at(-1)?.body.tools).toBeUndefined();
    // Read, and changed in another field, as before.
    expect((await mcpApi.api('GET', `/api/keys/${key.id}`)).body.mcp).toEqual({ servers: ['notes'] });
    const renamed = await mcpApi.api('PATCH', `/api/keys/${key.id}`, { name: 'kept-renamed' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.mcp).toEqual({ servers: ['notes'] });
    // Writing the list again is a new write: checked.
    expect((await mcpApi.api('PATCH', `/api/keys/${key.id}`, { mcp: { servers: ['notes'] } })).status).toBe(400);
  });
});
