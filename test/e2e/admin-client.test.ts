import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../../src/admin-client/index.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/** The typed admin client (`tollgate/admin`) against a running gateway: what the README's Management API lists. */
let tg: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  tg = await startGateway();
  admin = new AdminClient({ baseUrl: tg.url });
});
afterAll(async () => {
  await tg.stop();
});

describe('keys.list', () => {
  it('pages with limit and next_after, and finds keys with q, as GET /api/keys?limit=&after=&q= does', async () => {
    const made = [];
    for (const name of ['page-alpha', 'page-beta', 'page-gamma']) made.push(await admin.keys.create({ name }));
    const first = await admin.keys.list({ limit: 2 });
    expect(first.data.map((key) => key.name)).toEqual(['page-alpha', 'page-beta']);
    expect(first.has_more).toBe(true);
    // A position cursor (where the page's last key stands), not the key's id: it outlives that key's deletion.
    expect(first.next_after).toMatch(/^c_/);
    const second = await admin.keys.list({ limit: 2, after: first.next_after ?? undefined });
    expect(second.data.map((key) => key.name)).toEqual(['page-gamma']);
    expect(second.next_after).toBeNull();
    expect((await admin.keys.list({ q: 'BETA' })).data.map((key) => key.id)).toEqual([made[1]!.id]);
    // Without a limit, every key, as before.
    expect((await admin.keys.list()).data).toHaveLength(3);
  });

  it('answers just the keys named with ids, cut to fields, as GET /api/keys?ids=&fields= does', async () => {
    const made = [];
    for (const name of ['ids-one', 'ids-two', 'ids-three']) made.push(await admin.keys.create({ name }));
    const some = await admin.keys.list({ ids: [made[2]!.id, made[0]!.id], fields: ['name', 'team'] });
    expect(some).toEqual({ object: 'list', data: [{ id: made[2]!.id, name: 'ids-three', team: null }, { id: made[0]!.id, name: 'ids-one', team: null }] });
    expect((await admin.keys.list({ ids: [made[1]!.id] })).data[0]).toMatchObject({ id: made[1]!.id, name: 'ids-two', budget: null });
    await expect(admin.keys.list({ ids: [made[1]!.id], limit: 5 })).rejects.toMatchObject({ status: 400 });
  });

  it('continues a search after the last key of a page was renamed so that it no longer matches q', async () => {
    const made = [];
    for (const name of ['search-one', 'search-two', 'search-three']) made.push(await admin.keys.create({ name }));
    const first = await admin.keys.list({ limit: 1, q: 'search-' });
    expect(first.data.map((key) => key.name)).toEqual(['search-one']);
    await admin.keys.update(made[0]!.id, { name: 'renamed' });
    const second = await admin.keys.list({ limit: 1, q: 'search-', after: first.next_after ?? undefined });
    expect(second.data.map((key) => key.name)).toEqual(['search-two']);
    const third = await admin.keys.list({ limit: 1, q: 'search-', after: second.next_after ?? undefined });
    expect(third.data.map((key) => key.name)).toEqual(['search-three']);
    expect(third).toMatchObject({ has_more: false, next_after: null });
  });
});

describe('audit', () => {
  it('takes the filters and cursor of GET /api/audit and types next_before', async () => {
    for (const name of ['audit-a', 'audit-b', 'audit-c']) await admin.routes.put(name, { targets: [{ model: 'openai/gpt-4o-mini' }] });
    const first = await admin.audit({ limit: 2, action: 'route.created', target: 'routes' });
    expect(first.data.map((entry) => entry.target)).toEqual(['routes.audit-c', 'routes.audit-b']);
    expect(first.next_before).toBe(first.data[1]!.id);
    const rest = await admin.audit({ limit: 2, action: 'route.created', before: first.next_before ?? undefined, from: Date.now() - 60_000 });
    expect(rest.data.map((entry) => entry.target)).toEqual(['routes.audit-a']);
    expect(rest.next_before).toBeNull();
  });
});

describe('logs.written', () => {
  it('pages the log in write order with written_after, next_written_after and has_more, as GET /api/logs?written_after= does', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"openai/m","messages":[]}' });
      ids.push(res.headers.get('x-request-id') as string);
    }
    const first = await admin.logs.written({ written_after: 0, limit: 2 });
    expect(first.has_more).toBe(true);
    const rest = await admin.logs.written({ written_after: first.next_written_after, allow_gaps: false });
    expect(rest.has_more).toBe(false);
    expect([...first.data, ...rest.data].map((entry) => entry.id)).toEqual(ids);
    expect(rest.data.at(-1)?.write_seq).toBe(rest.next_written_after);
  });
});

describe('usage', () => {
  it('takes limit and types groups, truncated and others', async () => {
    for (const name of ['usage-a', 'usage-b']) {
      const { key } = await admin.keys.create({ name });
      await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: '{"model":"openai/m","messages":[]}' });
    }
    const all = await admin.usage({ group_by: 'key', interval: 'hour' });
    expect(all.truncated).toBe(false);
    expect(all.groups).toBeGreaterThanOrEqual(2);
    const one = await admin.usage({ group_by: 'key', interval: 'hour', limit: 1 });
    expect(one.groups).toBe(all.groups);
    expect(one.totals).toHaveLength(1);
    expect(one.truncated).toBe(true);
    expect(one.others?.groups).toBe(all.groups - 1);
    expect((one.others?.totals.requests ?? 0) + one.totals[0]!.requests).toBe(all.totals.reduce((sum, total) => sum + total.requests, 0));
  });

  it('pages through every group in name order with order group and next_after', async () => {
    const all = await admin.usage({ group_by: 'key', interval: 'hour' });
    const names: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await admin.usage({ group_by: 'key', interval: 'hour', order: 'group', limit: 1, ...(after === undefined ? {} : { after }) });
      names.push(...page.totals.map((total) => total.group));
      if (page.next_after === null || page.next_after === undefined) break;
      after = page.next_after;
    }
    expect(names).toEqual(all.totals.map((total) => total.group).sort());
  });
});

describe('config.put and config.patch', () => {
  it('apply with ifVersion only while the config is still at the version read, else 412 config_version_mismatch', async () => {
    const read = await admin.config.get();
    await admin.config.patch({ settings: { log_retention_days: 9 } }, { ifVersion: read.version });
    await expect(admin.config.patch({ settings: { log_retention_days: 8 } }, { ifVersion: read.version })).rejects.toMatchObject({ status: 412, code: 'config_version_mismatch' });
    await expect(admin.config.put({}, { ifVersion: read.version })).rejects.toMatchObject({ status: 412, code: 'config_version_mismatch' });
    expect((await admin.config.get()).settings.log_retention_days).toBe(9);
  });
});
