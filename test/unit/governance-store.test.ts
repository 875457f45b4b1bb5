import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open, type RootDatabase } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import type { GatewayEvents } from '../../src/core/events.js';
import { GatewayError } from '../../src/core/errors.js';
import { GovernanceStore, type RequestLogInput } from '../../src/governance/governance-store.js';
import { hashSecret } from '../../src/governance/key-secrets.js';
import { roundUsd } from '../../src/governance/periods.js';

const SPEC_BODY = { name: 'x', budget: 10, rate_limit: 60, models: ['openai/gpt-4o-mini'] };

let dir: string;
let root: RootDatabase;
let bus: EventBus;
let clock: Date;
let store: GovernanceStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'tollgate-governance-'));
  root = open({ path: join(dir, 'test.lmdb'), maxDbs: 16, compression: false });
  bus = new EventBus();
  clock = new Date('2025-03-12T09:30:00.000Z'); // a Wednesday
  store = new GovernanceStore(root, bus, () => clock);
});
afterEach(async () => {
  await root.close();
  rmSync(dir, { recursive: true, force: true });
});

function entry(keyId: string | null, cost: number, extra: Partial<RequestLogInput> = {}): RequestLogInput {
  return {
    at: clock.toISOString(),
    key_id: keyId,
    team_id: null,
    model: 'openai/gpt-4o-mini',
    provider: 'openai',
    upstream_model: 'gpt-4o-mini',
    status: 200,
    stream: false,
    cancelled: false,
    prompt_tokens: 10,
    completion_tokens: 5,
    cost_usd: cost,
    priced: true,
    duration_ms: 12,
    ...extra,
  };
}

/** What the pipeline does for one request: the spend stage charges the key (and team), the request-log subscriber writes the entry. */
async function charge(logged: RequestLogInput): Promise<void> {
  if (logged.key_id) await store.recordSpend(logged.key_id, logged.team_id, logged.cost_usd);
  await store.recordRequest(logged);
}

/** Runs `fn` and returns the GatewayError it throws (sync or async). */
async function gatewayError(fn: () => unknown): Promise<GatewayError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

async function expect400(fn: () => unknown, param: string | null): Promise<GatewayError> {
  const err = await gatewayError(fn);
  expect(err.status).toBe(400);
  expect(err.type).toBe('invalid_request_error');
  expect(err.param).toBe(param);
  return err;
}

describe('createKey', () => {
  it('accepts the spec body and returns the record with a one-time secret', async () => {
    const events: GatewayEvents['key.created'][] = [];
    bus.on('key.created', (payload) => events.push(payload));
    const { record, key } = await store.createKey(SPEC_BODY);
    expect(key).toMatch(/^tg-[A-Za-z0-9_-]{43}$/);
    expect(record).toMatchObject({
      name: 'x',
      budget: 10,
      rate_limit: 60,
      models: ['openai/gpt-4o-mini'],
      team: null,
      budget_period: 'total',
      tokens_per_minute: null,
      expires_at: null,
      metadata: {},
      disabled: false,
      spend: 0,
      requests: 0,
      total_spend: 0,
      total_requests: 0,
      period_start: clock.toISOString(),
      period_resets_at: null,
      created_at: clock.toISOString(),
      updated_at: clock.toISOString(),
      key_prefix: key.slice(0, 10),
    });
    expect(record.id).toMatch(/^vk_[0-9a-f]{16}$/);
    expect(record).not.toHaveProperty('key_hash');
    expect(record).not.toHaveProperty('key');
    expect(events).toEqual([{ keyId: record.id, name: 'x', team: null }]);
    expect(store.getKeyRecord(record.id)?.key_hash).toBe(hashSecret(key));
  });

  it('gives every key its own secret and id', async () => {
    const a = await store.createKey({ name: 'a' });
    clock = new Date(clock.getTime() + 1);
    const b = await store.createKey({ name: 'b' });
    expect(a.key).not.toBe(b.key);
    expect(a.record.id).not.toBe(b.record.id);
    expect(store.listKeys().map((k) => k.name)).toEqual(['a', 'b']);
  });

  it('pages keys in creation order from an index it keeps, and rebuilds that index for keys written without it', async () => {
    // Several keys a millisecond: the order is then by id, as the whole listing's.
    const names: string[] = [];
    for (let i = 0; i < 2_500; i++) {
      if (i % 3 === 0) clock = new Date(clock.getTime() + 1);
      names.push(`k${i}`);
    }
    const made = [];
    for (let i = 0; i < names.length; i += 500) made.push(...(await Promise.all(names.slice(i, i + 500).map((name) => store.createKey({ name })))));
    await store.deleteKey(made[1_200]!.record.id);
    const order = store.listKeys().map((key) => key.id);
    expect(order).toHaveLength(2_499);
    expect(order).not.toContain(made[1_200]!.record.id);
    const paged = async (): Promise<string[]> => {
      const ids: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await store.keyPage(700, after, () => true);
        ids.push(...page!.data.map((key) => key.id));
        if (!page!.hasMore) return ids;
        after = page!.data.at(-1)!.id;
      }
    };
    expect(await paged()).toEqual(order);
    expect((await store.keyPage(3, 'vk_nosuchkey00000', () => true))).toBeUndefined();
    const odd = await store.keyPage(5, order[1_000], (key) => Number(key.name.slice(1)) % 2 === 1);
    expect(odd!.data.map((key) => key.id)).toEqual(order.slice(1_001).filter((id) => Number(store.getKey(id).name.slice(1)) % 2 === 1).slice(0, 5));

    // A data directory from before the index: its keys are indexed when the store opens.
    root.openDB({ name: 'keys-by-creation' }).clearSync();
    store = new GovernanceStore(root, bus, () => clock);
    expect(store.listKeys().map((key) => key.id)).toEqual(order);
    expect(await paged()).toEqual(order);
    expect(store.keysByIds([order[5]!, 'vk_gone', order[2]!]).map((key) => key.id)).toEqual([order[5], order[2]]);
  });

  it('stores the optional fields, normalising expires_at', async () => {
    const { id } = await store.createTeam({ name: 'research' });
    const { record } = await store.createKey({
      name: 'full',
      budget: null,
      rate_limit: null,
      models: ['*', 'openai/*', 'openrouter/meta-llama/llama-3.1-8b'],
      team: id,
      budget_period: 'daily',
      tokens_per_minute: 5000,
      expires_at: '2030-01-01T02:00:00+02:00',
      metadata: { owner: 'ana', tags: ['a'] },
    });
    expect(record).toMatchObject({
      team: id,
      budget: null,
      budget_period: 'daily',
      tokens_per_minute: 5000,
      expires_at: '2030-01-01T00:00:00.000Z',
      metadata: { owner: 'ana', tags: ['a'] },
      period_start: '2025-03-12T09:30:00.000Z',
      period_resets_at: '2025-03-13T00:00:00.000Z',
    });
  });

  it.each([
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'x'.repeat(201) }, 'name'],
    [{ name: 5 }, 'name'],
    [{ name: 'x', budget: -1 }, 'budget'],
    [{ name: 'x', budget: '10' }, 'budget'],
    [{ name: 'x', rate_limit: 0 }, 'rate_limit'],
    [{ name: 'x', rate_limit: 1.5 }, 'rate_limit'],
    [{ name: 'x', tokens_per_minute: -5 }, 'tokens_per_minute'],
    [{ name: 'x', models: 'openai/gpt-4o' }, 'models'],
    [{ name: 'x', models: ['openai/gpt-4o', 'gpt 4o'] }, 'models.1'],
    [{ name: 'x', models: ['/gpt-4o'] }, 'models.0'],
    [{ name: 'x', budget_period: 'yearly' }, 'budget_period'],
    [{ name: 'x', expires_at: 'tomorrow' }, 'expires_at'],
    [{ name: 'x', metadata: [1] }, 'metadata'],
    [{ name: 'x', team: 5 }, 'team'],
    [{ name: 'x', colour: 'red' }, 'colour'],
    [{ name: 'x', spend: 0 }, 'spend'],
    [{ name: 'x', key_hash: 'abc' }, 'key_hash'],
  ])('refuses %j naming %s', async (body, param) => {
    const err = await expect400(() => store.createKey(body), param);
    expect(err.message).toContain(param.split('.')[0]);
    expect(store.listKeys()).toEqual([]);
  });

  it('refuses a body that is not an object', async () => {
    await expect400(() => store.createKey(null), null);
    await expect400(() => store.createKey(['x']), null);
  });

  it('refuses an unknown team with 400 naming team', async () => {
    const err = await expect400(() => store.createKey({ name: 'x', team: 'team_nope' }), 'team');
    expect(err.code).toBe('invalid_team');
    expect(store.listKeys()).toEqual([]);
  });
});

describe('keySpends', () => {
  it("gives every key's id, team and current-period spend, as the key views do", async () => {
    const { id: teamId } = await store.createTeam({ name: 'spenders' });
    const { record: a } = await store.createKey({ name: 'a', team: teamId });
    const { record: b } = await store.createKey({ name: 'b' });
    await charge(entry(a.id, 0.25));
    await charge(entry(b.id, 0.5));
    const byId = (rows: Array<{ id: string; team: string | null; spend: number }>) => new Map(rows.map((row) => [row.id, { team: row.team, spend: row.spend }]));
    const spends = byId(store.keySpends());
    expect(spends.get(a.id)).toEqual({ team: teamId, spend: 0.25 });
    expect(spends.get(b.id)).toEqual({ team: null, spend: 0.5 });
    expect(spends).toEqual(byId(store.listKeys().map((key) => ({ id: key.id, team: key.team ?? null, spend: key.spend }))));
  });
});

describe('secret lookup, rotate, delete', () => {
  it('finds a key by its secret, and nothing for other strings', async () => {
    const { record, key } = await store.createKey(SPEC_BODY);
    expect(store.findKeyBySecret(key)?.id).toBe(record.id);
    expect(store.findKeyBySecret(`${key}x`)).toBeUndefined();
    expect(store.findKeyBySecret('tg-unknown')).toBeUndefined();
    expect(store.findKeyBySecret('')).toBeUndefined();
  });

  it('rotate issues a new secret and the old one stops working at once', async () => {
    const { record, key: oldKey } = await store.createKey(SPEC_BODY);
    clock = new Date('2025-03-12T10:00:00.000Z');
    const rotated = await store.rotateKey(record.id);
    expect(rotated.key).toMatch(/^tg-[A-Za-z0-9_-]{43}$/);
    expect(rotated.key).not.toBe(oldKey);
    expect(rotated.record.id).toBe(record.id);
    expect(rotated.record.key_prefix).toBe(rotated.key.slice(0, 10));
    expect(rotated.record.updated_at).toBe('2025-03-12T10:00:00.000Z');
    expect(rotated.record).not.toHaveProperty('key_hash');
    expect(store.findKeyBySecret(oldKey)).toBeUndefined();
    expect(store.findKeyBySecret(rotated.key)?.id).toBe(record.id);
  });

  it('rotate keeps the counters', async () => {
    const { record } = await store.createKey(SPEC_BODY);
    await charge(entry(record.id, 0.25));
    const rotated = await store.rotateKey(record.id);
    expect(rotated.record).toMatchObject({ spend: 0.25, requests: 1, total_spend: 0.25, total_requests: 1 });
  });

  it('delete removes the record and its hash', async () => {
    const { record, key } = await store.createKey(SPEC_BODY);
    await store.deleteKey(record.id);
    expect(store.findKeyBySecret(key)).toBeUndefined();
    expect(store.getKeyRecord(record.id)).toBeUndefined();
    expect(store.listKeys()).toEqual([]);
    expect([...root.openDB<string, string>({ name: 'key-hashes' }).getKeys()]).toEqual([]);
    const err = await gatewayError(() => store.getKey(record.id));
    expect(err).toMatchObject({ status: 404, code: 'key_not_found' });
  });

  it('404s on unknown ids everywhere', async () => {
    for (const fn of [
      () => store.getKey('vk_nope'),
      () => store.updateKey('vk_nope', { name: 'y' }),
      () => store.rotateKey('vk_nope'),
      () => store.deleteKey('vk_nope'),
    ]) {
      expect(await gatewayError(fn)).toMatchObject({ status: 404, code: 'key_not_found' });
    }
    for (const fn of [() => store.getTeam('team_nope'), () => store.updateTeam('team_nope', { name: 'y' }), () => store.deleteTeam('team_nope')]) {
      expect(await gatewayError(fn)).toMatchObject({ status: 404, code: 'team_not_found' });
    }
  });
});

describe('updateKey', () => {
  it('patches the given fields and leaves the rest', async () => {
    const { record, key } = await store.createKey(SPEC_BODY);
    clock = new Date('2025-03-12T11:00:00.000Z');
    const updated = await store.updateKey(record.id, { name: 'renamed', budget: null, models: [], disabled: true, metadata: { a: 1 } });
    expect(updated).toMatchObject({ name: 'renamed', budget: null, models: [], disabled: true, metadata: { a: 1 }, rate_limit: 60 });
    expect(updated.updated_at).toBe('2025-03-12T11:00:00.000Z');
    expect(updated.created_at).toBe(record.created_at);
    expect(updated.key_prefix).toBe(record.key_prefix);
    expect(store.getKey(record.id)).toEqual(updated);
    // The secret still works; the hash is untouched by a patch.
    expect(store.findKeyBySecret(key)?.disabled).toBe(true);
  });

  it('validates the patch and names the field', async () => {
    const { record } = await store.createKey(SPEC_BODY);
    await expect400(() => store.updateKey(record.id, { rate_limit: 0 }), 'rate_limit');
    await expect400(() => store.updateKey(record.id, { models: ['no such model'] }), 'models.0');
    await expect400(() => store.updateKey(record.id, { name: '' }), 'name');
    await expect400(() => store.updateKey(record.id, { spend: 0 }), 'spend');
    await expect400(() => store.updateKey(record.id, { id: 'vk_other' }), 'id');
    await expect400(() => store.updateKey(record.id, { nope: 1 }), 'nope');
    await expect400(() => store.updateKey(record.id, { team: 'team_nope' }), 'team');
    expect(store.getKey(record.id)).toEqual(record);
  });

  it('sets, replaces and clears per-model rate limits', async () => {
    const { record } = await store.createKey({ ...SPEC_BODY, model_rate_limits: { 'openai/gpt-4o-mini': 5 } });
    expect(record.model_rate_limits).toEqual({ 'openai/gpt-4o-mini': 5 });
    expect((await store.createKey({ name: 'plain' })).record.model_rate_limits).toEqual({});
    expect((await store.updateKey(record.id, { model_rate_limits: { 'chat-default': 2 } })).model_rate_limits).toEqual({ 'chat-default': 2 });
    expect((await store.updateKey(record.id, { model_rate_limits: null })).model_rate_limits).toEqual({});
    await expect400(() => store.updateKey(record.id, { model_rate_limits: { 'openai/gpt-4o': 0 } }), 'model_rate_limits.openai/gpt-4o');
    await expect400(() => store.createKey({ name: 'x', model_rate_limits: [5] }), 'model_rate_limits');
  });

  it('moves a key into and out of a team', async () => {
    const team = await store.createTeam({ name: 't' });
    const { record } = await store.createKey(SPEC_BODY);
    expect((await store.updateKey(record.id, { team: team.id })).team).toBe(team.id);
    expect((await store.updateKey(record.id, { team: null })).team).toBeNull();
  });

  it('changing budget_period starts a new period now that keeps the spend made (not zeroed); lifetime totals stay', async () => {
    const { record } = await store.createKey({ ...SPEC_BODY, budget_period: 'monthly' });
    await charge(entry(record.id, 1.5));
    clock = new Date('2025-03-14T15:00:00.000Z');
    const same = await store.updateKey(record.id, { budget_period: 'monthly', name: 'y' });
    expect(same).toMatchObject({ spend: 1.5, requests: 1, period_start: '2025-03-12T09:30:00.000Z' });
    const changed = await store.updateKey(record.id, { budget_period: 'weekly' });
    // Zeroed counters let the key spend its whole budget again; what of the spend fell in the week cannot be told, so it is kept.
    expect(changed).toMatchObject({
      spend: 1.5,
      requests: 1,
      period_start: '2025-03-14T15:00:00.000Z',
      period_resets_at: '2025-03-17T00:00:00.000Z',
      total_spend: 1.5,
      total_requests: 1,
    });
  });
});

describe('periods and rollover', () => {
  it('a daily key rolls over at 00:00Z: views show the new period, totals stay, no write needed', async () => {
    const { record } = await store.createKey({ ...SPEC_BODY, budget_period: 'daily' });
    await charge(entry(record.id, 2));
    await charge(entry(record.id, 3));
    expect(store.getKey(record.id)).toMatchObject({ spend: 5, requests: 2, period_resets_at: '2025-03-13T00:00:00.000Z' });

    clock = new Date('2025-03-12T23:59:59.999Z');
    expect(store.getKey(record.id).spend).toBe(5);

    clock = new Date('2025-03-13T00:00:00.000Z');
    const raw = store.getKeyRecord(record.id)!;
    expect(raw.spend).toBe(5); // currentUsage is pure
    expect(store.currentUsage(raw)).toEqual({ spend: 0, requests: 0, period_start: '2025-03-13T00:00:00.000Z', period_resets_at: '2025-03-14T00:00:00.000Z' });
    expect(store.getKey(record.id)).toMatchObject({ spend: 0, requests: 0, total_spend: 5, total_requests: 2 });
    expect(store.listKeys()[0]).toMatchObject({ spend: 0, requests: 0 });

    // Several days later the period is the one holding "now", not the one after the last reset.
    clock = new Date('2025-03-20T08:00:00.000Z');
    await charge(entry(record.id, 0.5));
    expect(store.getKeyRecord(record.id)).toMatchObject({
      spend: 0.5,
      requests: 1,
      period_start: '2025-03-20T00:00:00.000Z',
      period_resets_at: '2025-03-21T00:00:00.000Z',
      total_spend: 5.5,
      total_requests: 3,
    });
  });

  it('monthly and weekly periods reset at their calendar boundaries', async () => {
    const monthly = (await store.createKey({ name: 'm', budget_period: 'monthly' })).record;
    const weekly = (await store.createKey({ name: 'w', budget_period: 'weekly' })).record;
    expect(monthly.period_resets_at).toBe('2025-04-01T00:00:00.000Z');
    expect(weekly.period_resets_at).toBe('2025-03-17T00:00:00.000Z');
    await charge(entry(monthly.id, 1));
    await charge(entry(weekly.id, 1));
    clock = new Date('2025-03-17T00:00:00.000Z');
    expect(store.getKey(weekly.id)).toMatchObject({ spend: 0, period_start: '2025-03-17T00:00:00.000Z', period_resets_at: '2025-03-24T00:00:00.000Z' });
    expect(store.getKey(monthly.id).spend).toBe(1);
    clock = new Date('2025-04-01T00:00:00.000Z');
    expect(store.getKey(monthly.id)).toMatchObject({ spend: 0, period_start: '2025-04-01T00:00:00.000Z', period_resets_at: '2025-05-01T00:00:00.000Z' });
  });

  it('a total budget never resets', async () => {
    const { record } = await store.createKey(SPEC_BODY);
    await charge(entry(record.id, 4));
    clock = new Date('2035-01-01T00:00:00.000Z');
    expect(store.getKey(record.id)).toMatchObject({ spend: 4, requests: 1, period_resets_at: null });
  });

  it('team periods roll over the same way', async () => {
    const team = await store.createTeam({ name: 't', budget: 100, budget_period: 'daily' });
    const { record } = await store.createKey({ name: 'k', team: team.id });
    await charge(entry(record.id, 7));
    expect(store.getTeam(team.id)).toMatchObject({ spend: 7, requests: 1 });
    clock = new Date('2025-03-13T01:00:00.000Z');
    expect(store.getTeam(team.id)).toMatchObject({ spend: 0, requests: 0, period_start: '2025-03-13T00:00:00.000Z' });
    expect(store.listTeams()[0]).toMatchObject({ spend: 0 });
  });
});

describe('recordSpend and recordRequest', () => {
  it('charges the key and its team, and writes the log entry', async () => {
    const team = await store.createTeam({ name: 't' });
    const { record } = await store.createKey({ name: 'k', team: team.id });
    await charge(entry(record.id, 0.123456789123));
    expect(store.getKey(record.id)).toMatchObject({ spend: 0.123456789, requests: 1, total_spend: 0.123456789, total_requests: 1 });
    expect(store.getTeam(team.id)).toMatchObject({ spend: 0.123456789, requests: 1 });
    const [logged] = store.requestLog({});
    // The charge named no team: the key's team is charged. The entry is written as given.
    expect(logged).toMatchObject({ key_id: record.id, cost_usd: 0.123456789123, status: 200 });
    expect(logged?.id).toMatch(/^\d{15}-\d{6}$/);
  });

  it('logs requests without a key and keeps a given id', async () => {
    await charge(entry(null, 0.5, { id: 'custom-id' }));
    expect(store.requestLog({})).toEqual([expect.objectContaining({ id: 'custom-id', key_id: null, team_id: null })]);
  });

  it('ignores negative and non-finite costs but still counts the request', async () => {
    const { record } = await store.createKey(SPEC_BODY);
    await charge(entry(record.id, -1));
    await charge(entry(record.id, Number.NaN));
    expect(store.getKey(record.id)).toMatchObject({ spend: 0, requests: 2 });
  });

  it('200 concurrent calls add up exactly, on the key and on the team', async () => {
    const team = await store.createTeam({ name: 't', budget: 1000 });
    const { record } = await store.createKey({ name: 'k', team: team.id, budget: 1000 });
    const other = (await store.createKey({ name: 'other', team: team.id })).record;
    const costs = Array.from({ length: 200 }, (_, i) => 0.000123 * (i + 1) + (i % 7) * 0.1);
    const expected = costs.reduce((sum, cost) => roundUsd(sum + cost), 0);
    await Promise.all(costs.map((cost, i) => charge(entry(record.id, cost, { prompt_tokens: i }))));
    await Promise.all(Array.from({ length: 50 }, () => charge(entry(other.id, 0.01))));

    expect(store.getKey(record.id)).toMatchObject({ spend: expected, requests: 200, total_spend: expected, total_requests: 200 });
    expect(store.getKey(other.id)).toMatchObject({ spend: 0.5, requests: 50 });
    expect(store.getTeam(team.id)).toMatchObject({ spend: roundUsd(expected + 0.5), requests: 250 });
    expect(store.requestLog({ key_id: record.id, limit: 500 })).toHaveLength(200);
    expect(store.requestLog({ limit: 500 })).toHaveLength(250);
  });

  it('admin edits running alongside recordSpend lose no spend', async () => {
    const { record } = await store.createKey(SPEC_BODY);
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < 50; i++) {
      work.push(charge(entry(record.id, 0.01)));
      if (i % 10 === 0) work.push(store.updateKey(record.id, { name: `n${i}` }), store.rotateKey(record.id));
    }
    await Promise.all(work);
    expect(store.getKey(record.id)).toMatchObject({ spend: 0.5, requests: 50, name: 'n40' });
  });
});

describe('requestLog', () => {
  it('lists newest first, pages with before, and filters by key', async () => {
    const a = (await store.createKey({ name: 'a' })).record;
    const b = (await store.createKey({ name: 'b' })).record;
    for (let i = 0; i < 6; i++) {
      clock = new Date(Date.parse('2025-03-12T10:00:00.000Z') + i * 1000);
      await charge(entry(i % 2 === 0 ? a.id : b.id, i, { prompt_tokens: i }));
    }
    const all = store.requestLog({});
    expect(all.map((e) => e.prompt_tokens)).toEqual([5, 4, 3, 2, 1, 0]);

    const page1 = store.requestLog({ limit: 4 });
    expect(page1.map((e) => e.prompt_tokens)).toEqual([5, 4, 3, 2]);
    const page2 = store.requestLog({ limit: 4, before: page1.at(-1)!.id });
    expect(page2.map((e) => e.prompt_tokens)).toEqual([1, 0]);

    expect(store.requestLog({ key_id: a.id }).map((e) => e.prompt_tokens)).toEqual([4, 2, 0]);
    const aPage = store.requestLog({ key_id: a.id, limit: 1 });
    expect(store.requestLog({ key_id: a.id, before: aPage[0]!.id }).map((e) => e.prompt_tokens)).toEqual([2, 0]);
    expect(store.requestLog({ key_id: 'vk_none' })).toEqual([]);
  });

  it('ids sort by time even within one millisecond', async () => {
    const { record } = await store.createKey({ name: 'a' });
    await Promise.all(Array.from({ length: 20 }, (_, i) => charge(entry(record.id, 0, { prompt_tokens: i }))));
    expect(store.requestLog({}).map((e) => e.prompt_tokens)).toEqual(Array.from({ length: 20 }, (_, i) => 19 - i));
  });

  it('clamps the limit', async () => {
    await Promise.all(Array.from({ length: 3 }, () => charge(entry(null, 0))));
    expect(store.requestLog({ limit: 0 })).toHaveLength(3);
    expect(store.requestLog({ limit: 2 })).toHaveLength(2);
  });
});

describe('teams', () => {
  it('create, list, get, update, delete', async () => {
    const team = await store.createTeam({ name: 'research', budget: 50, budget_period: 'monthly', rate_limit: 100, tokens_per_minute: 10_000, metadata: { cc: '42' } });
    expect(team).toMatchObject({
      name: 'research',
      budget: 50,
      budget_period: 'monthly',
      rate_limit: 100,
      tokens_per_minute: 10_000,
      metadata: { cc: '42' },
      spend: 0,
      requests: 0,
      period_start: clock.toISOString(),
      period_resets_at: '2025-04-01T00:00:00.000Z',
      created_at: clock.toISOString(),
    });
    expect(team.id).toMatch(/^team_[0-9a-f]{16}$/);
    expect(store.listTeams()).toEqual([team]);
    expect(store.getTeam(team.id)).toEqual(team);
    expect(store.getTeamRecord(team.id)).toEqual(team);

    clock = new Date('2025-03-13T00:00:00.000Z');
    const updated = await store.updateTeam(team.id, { name: 'r&d', budget: null, budget_period: 'total' });
    expect(updated).toMatchObject({ name: 'r&d', budget: null, budget_period: 'total', period_start: '2025-03-13T00:00:00.000Z', period_resets_at: null, rate_limit: 100 });

    await store.deleteTeam(team.id);
    expect(store.listTeams()).toEqual([]);
    expect(store.getTeamRecord(team.id)).toBeUndefined();
  });

  it('validates team bodies', async () => {
    await expect400(() => store.createTeam({}), 'name');
    await expect400(() => store.createTeam({ name: 't', budget: -3 }), 'budget');
    await expect400(() => store.createTeam({ name: 't', models: [] }), 'models');
    await expect400(() => store.createTeam({ name: 't', budget_period: 'hourly' }), 'budget_period');
    const team = await store.createTeam({ name: 't' });
    await expect400(() => store.updateTeam(team.id, { rate_limit: 0 }), 'rate_limit');
    await expect400(() => store.updateTeam(team.id, { spend: 0 }), 'spend');
  });

  it('refuses to delete a team that keys still reference (409), and allows it once they are gone', async () => {
    const team = await store.createTeam({ name: 't' });
    const { record } = await store.createKey({ name: 'k', team: team.id });
    const err = await gatewayError(() => store.deleteTeam(team.id));
    expect(err).toMatchObject({ status: 409, code: 'team_in_use' });
    expect(err.message).toContain(record.id);
    expect(store.getTeam(team.id).id).toBe(team.id);
    await store.deleteKey(record.id);
    await store.deleteTeam(team.id);
    expect(store.listTeams()).toEqual([]);
  });
});

describe('what is stored', () => {
  it('never holds a secret, in any database', async () => {
    const team = await store.createTeam({ name: 't' });
    const secrets: string[] = [];
    const a = await store.createKey({ ...SPEC_BODY, team: team.id });
    secrets.push(a.key);
    const b = await store.createKey({ name: 'b', metadata: { note: 'x' } });
    secrets.push(b.key);
    secrets.push((await store.rotateKey(b.record.id)).key);
    await store.updateKey(a.record.id, { name: 'renamed' });
    await charge(entry(a.record.id, 1));
    await charge(entry(b.record.id, 1));

    const blobs: Buffer[] = [];
    for (const name of ['keys', 'key-hashes', 'teams', 'request-log', 'request-log-by-key']) {
      const raw = root.openDB({ name, encoding: 'binary', keyEncoding: 'binary' });
      let count = 0;
      for (const { key, value } of raw.getRange()) {
        blobs.push(Buffer.from(key as Uint8Array), Buffer.from(value as Uint8Array));
        count++;
      }
      if (name !== 'teams') expect(count, name).toBeGreaterThan(0);
    }
    // The root database holds only the names of the named databases.
    for (const key of root.getKeys()) blobs.push(Buffer.from(String(key)));
    const all = Buffer.concat(blobs);
    for (const secret of secrets) {
      // Neither the whole secret nor its random part (which is also what follows the stored 10-char prefix).
      expect(all.includes(secret)).toBe(false);
      expect(all.includes(secret.slice(3))).toBe(false);
      expect(all.includes(secret.slice(10, 30))).toBe(false);
    }
    // What is there: the hashes of the live secrets.
    expect(all.includes(hashSecret(a.key))).toBe(true);
    expect(all.includes(hashSecret(secrets[2]!))).toBe(true);
    expect(all.includes(hashSecret(b.key))).toBe(false);
  });

  it('survives reopening the environment', async () => {
    const { record, key } = await store.createKey(SPEC_BODY);
    await charge(entry(record.id, 0.75));
    await root.close();
    root = open({ path: join(dir, 'test.lmdb'), maxDbs: 16, compression: false });
    store = new GovernanceStore(root, bus, () => clock);
    expect(store.findKeyBySecret(key)?.id).toBe(record.id);
    expect(store.getKey(record.id)).toMatchObject({ spend: 0.75, requests: 1 });
    expect(store.requestLog({ key_id: record.id })).toHaveLength(1);
  });
});
