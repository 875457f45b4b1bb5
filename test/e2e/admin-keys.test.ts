import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GovernanceStore } from '../../src/governance/governance-store.js';
import { AdminClient, type AdminResponse } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

const SPEC_BODY = { name: 'x', budget: 10, rate_limit: 60, models: ['openai/gpt-4o-mini'] };
const KEY_SHAPE = /^tg-[A-Za-z0-9_-]{43}$/;

let tg: RunningGateway;
let api: AdminClient;

beforeEach(async () => {
  tg = await startGateway();
  api = new AdminClient(tg.url);
});
afterEach(async () => {
  await tg.stop();
});

/** The gateway's governance store, to feed the request log without the request pipeline. */
function governance(): GovernanceStore {
  return (tg.gateway as unknown as { governance: GovernanceStore }).governance;
}

function expectOpenAIError(response: AdminResponse, status: number, fields: { code?: string | null; param?: string | null; type?: string } = {}): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  expect(Object.keys(response.body)).toEqual(['error']);
  expect(Object.keys(response.body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof response.body.error.message).toBe('string');
  expect(response.body.error).toMatchObject(fields);
}

async function createKey(body: unknown = SPEC_BODY): Promise<{ id: string; key: string; body: any }> {
  const res = await api.post('/api/keys', body);
  expect(res.status).toBe(201);
  return { id: res.body.id, key: res.body.key, body: res.body };
}

describe('virtual keys', () => {
  it('POST /api/keys with the spec body answers 201 with the record and the secret, once', async () => {
    const res = await api.post('/api/keys', SPEC_BODY);
    expect(res.status).toBe(201);
    expect(res.headers.get('location')).toBe(`/api/keys/${res.body.id}`);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body.key).toMatch(KEY_SHAPE);
    expect(res.body).toMatchObject({
      name: 'x',
      budget: 10,
      rate_limit: 60,
      models: ['openai/gpt-4o-mini'],
      team: null,
      budget_period: 'total',
      tokens_per_minute: null,
      expires_at: null,
      disabled: false,
      metadata: {},
      spend: 0,
      requests: 0,
      total_spend: 0,
      total_requests: 0,
      period_resets_at: null,
      key_prefix: res.body.key.slice(0, 10),
    });
    for (const field of ['id', 'created_at', 'updated_at', 'period_start']) expect(typeof res.body[field]).toBe('string');
    expect(res.body).not.toHaveProperty('key_hash');
    const { key, id } = res.body;

    const list = await api.get('/api/keys');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.data).toHaveLength(1);
    const { key: _secret, ...record } = res.body;
    expect(list.body.data[0]).toEqual(record);

    const one = await api.get(`/api/keys/${id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(record);

    // Neither the secret nor its hash appears in anything but the creation answer.
    for (const seen of api.seen.slice(1)) {
      expect(seen.text).not.toContain(key);
      expect(seen.text).not.toContain(key.slice(10));
      expect(seen.text).not.toContain('key_hash');
    }
  });

  it('accepts the optional fields', async () => {
    const team = await api.post('/api/teams', { name: 'research' });
    const { body } = await createKey({
      name: 'full',
      budget: 2.5,
      rate_limit: 10,
      models: ['openai/*'],
      team: team.body.id,
      budget_period: 'monthly',
      tokens_per_minute: 1000,
      expires_at: '2030-01-01T00:00:00Z',
      metadata: { owner: 'ana' },
    });
    expect(body).toMatchObject({ team: team.body.id, budget_period: 'monthly', tokens_per_minute: 1000, expires_at: '2030-01-01T00:00:00.000Z', metadata: { owner: 'ana' } });
    expect(typeof body.period_resets_at).toBe('string');
  });

  it('PATCH updates fields, disable included', async () => {
    const { id } = await createKey();
    const res = await api.patch(`/api/keys/${id}`, { name: 'renamed', budget: 20, models: [], disabled: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, name: 'renamed', budget: 20, models: [], disabled: true, rate_limit: 60 });
    expect(res.body).not.toHaveProperty('key_hash');
    expect(res.body).not.toHaveProperty('key');
    expect((await api.get(`/api/keys/${id}`)).body).toEqual(res.body);
    expect((await api.patch(`/api/keys/${id}`, { disabled: false })).body.disabled).toBe(false);
  });

  it('rotate answers a new secret; the old one no longer resolves', async () => {
    const { id, key } = await createKey();
    const res = await api.post(`/api/keys/${id}/rotate`);
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(id);
    expect(res.body.key).toMatch(KEY_SHAPE);
    expect(res.body.key).not.toBe(key);
    expect(res.body.key_prefix).toBe(res.body.key.slice(0, 10));
    expect(res.body).not.toHaveProperty('key_hash');
    expect(governance().findKeyBySecret(key)).toBeUndefined();
    expect(governance().findKeyBySecret(res.body.key)?.id).toBe(id);
  });

  it('DELETE answers 204, then the key is gone', async () => {
    const { id, key } = await createKey();
    const res = await api.delete(`/api/keys/${id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expectOpenAIError(await api.get(`/api/keys/${id}`), 404, { code: 'key_not_found' });
    expect((await api.get('/api/keys')).body.data).toEqual([]);
    expect(governance().findKeyBySecret(key)).toBeUndefined();
  });

  it('404s on unknown key ids', async () => {
    expectOpenAIError(await api.get('/api/keys/vk_nope'), 404, { code: 'key_not_found', type: 'invalid_request_error' });
    expectOpenAIError(await api.patch('/api/keys/vk_nope', { name: 'y' }), 404, { code: 'key_not_found' });
    expectOpenAIError(await api.post('/api/keys/vk_nope/rotate'), 404, { code: 'key_not_found' });
    expectOpenAIError(await api.delete('/api/keys/vk_nope'), 404, { code: 'key_not_found' });
  });

  it.each([
    [{ budget: 10 }, 'name'],
    [{ name: 'x', budget: -1 }, 'budget'],
    [{ name: 'x', rate_limit: 0 }, 'rate_limit'],
    [{ name: 'x', rate_limit: 2.5 }, 'rate_limit'],
    [{ name: 'x', models: ['gpt 4o'] }, 'models.0'],
    [{ name: 'x', budget_period: 'yearly' }, 'budget_period'],
    [{ name: 'x', tokens_per_minute: 'lots' }, 'tokens_per_minute'],
    [{ name: 'x', expires_at: 'next week' }, 'expires_at'],
    [{ name: 'x', metadata: 'm' }, 'metadata'],
    [{ name: 'x', team: 'team_missing' }, 'team'],
    [{ name: 'x', owner: 'ana' }, 'owner'],
  ])('POST /api/keys %j is a 400 naming %s', async (body, param) => {
    expectOpenAIError(await api.post('/api/keys', body), 400, { type: 'invalid_request_error', param });
    expect((await api.get('/api/keys')).body.data).toEqual([]);
  });

  it('400s on bad bodies and bad patches', async () => {
    expectOpenAIError(await api.post('/api/keys'), 400, { type: 'invalid_request_error' });
    expectOpenAIError(await api.post('/api/keys', [SPEC_BODY]), 400, { type: 'invalid_request_error' });
    expectOpenAIError(await api.post('/api/keys', undefined, { raw: '{"name":' }), 400);
    const { id } = await createKey();
    expectOpenAIError(await api.patch(`/api/keys/${id}`, { rate_limit: -1 }), 400, { param: 'rate_limit' });
    expectOpenAIError(await api.patch(`/api/keys/${id}`, { spend: 0 }), 400, { param: 'spend', code: 'read_only_field' });
    expectOpenAIError(await api.patch(`/api/keys/${id}`, { team: 'team_missing' }), 400, { param: 'team', code: 'invalid_team' });
    expect((await api.get(`/api/keys/${id}`)).body).toMatchObject({ rate_limit: 60, spend: 0, team: null });
  });
});

describe('teams', () => {
  it('CRUD', async () => {
    const created = await api.post('/api/teams', { name: 'research', budget: 100, budget_period: 'monthly', rate_limit: 600, tokens_per_minute: 100_000, metadata: { cc: 7 } });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.headers.get('location')).toBe(`/api/teams/${id}`);
    expect(created.body).toMatchObject({ name: 'research', budget: 100, budget_period: 'monthly', rate_limit: 600, tokens_per_minute: 100_000, metadata: { cc: 7 }, spend: 0, requests: 0 });
    for (const field of ['created_at', 'updated_at', 'period_start', 'period_resets_at']) expect(typeof created.body[field]).toBe('string');

    expect((await api.get('/api/teams')).body).toEqual({ object: 'list', data: [created.body] });
    expect((await api.get(`/api/teams/${id}`)).body).toEqual(created.body);

    const patched = await api.patch(`/api/teams/${id}`, { name: 'r&d', budget: null, budget_period: 'total' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, name: 'r&d', budget: null, budget_period: 'total', period_resets_at: null, rate_limit: 600 });

    const removed = await api.delete(`/api/teams/${id}`);
    expect(removed.status).toBe(204);
    expectOpenAIError(await api.get(`/api/teams/${id}`), 404, { code: 'team_not_found' });
    expect((await api.get('/api/teams')).body.data).toEqual([]);
  });

  it('400s and 404s', async () => {
    expectOpenAIError(await api.post('/api/teams', {}), 400, { param: 'name' });
    expectOpenAIError(await api.post('/api/teams', { name: 't', budget: -1 }), 400, { param: 'budget' });
    expectOpenAIError(await api.post('/api/teams', { name: 't', models: ['openai/*'] }), 400, { param: 'models' });
    expectOpenAIError(await api.get('/api/teams/team_nope'), 404, { code: 'team_not_found' });
    expectOpenAIError(await api.patch('/api/teams/team_nope', { name: 'y' }), 404, { code: 'team_not_found' });
    expectOpenAIError(await api.delete('/api/teams/team_nope'), 404, { code: 'team_not_found' });
  });

  it('deleting a team that keys still use is a 409; it works once the keys have moved', async () => {
    const team = (await api.post('/api/teams', { name: 't' })).body;
    const { id } = await createKey({ ...SPEC_BODY, team: team.id });
    expectOpenAIError(await api.delete(`/api/teams/${team.id}`), 409, { code: 'team_in_use', type: 'invalid_request_error' });
    expect((await api.get(`/api/teams/${team.id}`)).status).toBe(200);
    expect((await api.patch(`/api/keys/${id}`, { team: null })).body.team).toBeNull();
    expect((await api.delete(`/api/teams/${team.id}`)).status).toBe(204);
  });
});

describe('request log', () => {
  it('GET /api/logs pages newest first and filters by key', async () => {
    const { id } = await createKey();
    const store = governance();
    const base = {
      at: new Date().toISOString(),
      team_id: null,
      model: 'openai/gpt-4o-mini',
      provider: 'openai',
      upstream_model: 'gpt-4o-mini',
      status: 200,
      stream: false,
      cancelled: false,
      completion_tokens: 1,
      cost_usd: 0.01,
      priced: true,
      duration_ms: 3,
    };
    // As the pipeline does: the spend stage charges the key, the request-log subscriber writes the entry.
    for (let i = 0; i < 5; i++) {
      const keyId = i % 2 === 0 ? id : null;
      if (keyId) await store.recordSpend(keyId, null, base.cost_usd);
      await store.recordRequest({ ...base, key_id: keyId, prompt_tokens: i });
    }

    const first = await api.get('/api/logs?limit=3');
    expect(first.status).toBe(200);
    expect(first.body.object).toBe('list');
    expect(first.body.data.map((e: any) => e.prompt_tokens)).toEqual([4, 3, 2]);
    expect(first.body.next_before).toBe(first.body.data[2].id);
    const second = await api.get(`/api/logs?limit=3&before=${encodeURIComponent(first.body.next_before)}`);
    expect(second.body.data.map((e: any) => e.prompt_tokens)).toEqual([1, 0]);
    expect(second.body.next_before).toBeNull();

    const mine = await api.get(`/api/logs?key_id=${id}`);
    expect(mine.body.data.map((e: any) => e.prompt_tokens)).toEqual([4, 2, 0]);
    expect((await api.get(`/api/keys/${id}`)).body).toMatchObject({ spend: 0.03, requests: 3 });

    expectOpenAIError(await api.get('/api/logs?limit=0'), 400, { param: 'limit' });
    expectOpenAIError(await api.get('/api/logs?limit=abc'), 400, { param: 'limit' });
  });
});
