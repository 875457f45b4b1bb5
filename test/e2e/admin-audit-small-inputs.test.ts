import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

/**
 * Small inputs of the management API that were read wrongly:
 *
 * 1. `GET /api/keys?after=<cursor>` without `limit` ignored `after` and answered every key from the first.
 * 2. An empty `after` on `/api/keys` (with `limit`) was a 400 "Unknown cursor ''", while every other empty cursor or
 *    filter of `/api/logs`, `/api/usage`, `/api/audit` (and `q=` on `/api/keys`) counts as not given.
 * 3. `TOLLGATE_MAX_BODY_BYTES=0x10` was read as 16 bytes (`Number('0x10')`), `1e3` as 1000: the numeric environment
 *    settings take what the file takes, a decimal integer.
 * 4. `PATCH /api/config {"settings": {"upstream_timeouts": {}}}` (an empty object below a section) made a new version
 *    and an audit entry although nothing changed.
 */

let gw: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  gw = await startGateway({});
  admin = new AdminClient(gw.url);
});

afterAll(async () => {
  await gw?.stop();
});

describe('GET /api/keys with after', () => {
  it('without limit, answers the page after the cursor at the default page size (50), with its next_after', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 53; i++) {
      const created = await admin.post('/api/keys', { name: `small-${String(i).padStart(2, '0')}` });
      expect(created.status).toBe(201);
      ids.push(created.body.id as string);
    }
    const first = await admin.get('/api/keys?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((key: { id: string }) => key.id)).toEqual(ids.slice(0, 2));

    const byCursor = await admin.get(`/api/keys?after=${encodeURIComponent(first.body.next_after as string)}`);
    expect(byCursor.status).toBe(200);
    expect(byCursor.body.data.map((key: { id: string }) => key.id)).toEqual(ids.slice(2, 52));
    expect(byCursor.body.has_more).toBe(true);

    const rest = await admin.get(`/api/keys?after=${encodeURIComponent(byCursor.body.next_after as string)}`);
    expect(rest.body.data.map((key: { id: string }) => key.id)).toEqual(ids.slice(52));
    expect(rest.body.has_more).toBe(false);
    expect(rest.body.next_after).toBeNull();

    // The id of a key serves as after too, and a cursor that names nothing is the 400 it is with limit.
    const byId = await admin.get(`/api/keys?after=${ids[50]}&fields=name`);
    expect(byId.body.data).toEqual([
      { id: ids[51], name: 'small-51' },
      { id: ids[52], name: 'small-52' },
    ]);
    const unknown = await admin.get('/api/keys?after=vk_nothing');
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.param).toBe('after');

    // Without limit or after, every key, as before.
    const all = await admin.get('/api/keys');
    expect(all.body.data).toHaveLength(53);
  });
});

describe('empty cursor and filter values', () => {
  it.each([
    '/api/logs?before=',
    '/api/logs?before=&key_id=&model=&status=&from=&to=&tz=',
    '/api/audit?before=&action=&target=&from=',
    '/api/usage?order=group&after=&from=',
    '/api/keys?limit=2&after=',
    '/api/keys?limit=2&after=&q=',
    '/api/keys?after=',
  ])('%s counts as not given on every list', async (query) => {
    const withEmpty = await admin.get(query);
    expect(withEmpty.status, withEmpty.text).toBe(200);
    const without = await admin.get(query.replace(/[?&][a-z_]+=(?=&|$)/g, '').replace(/^([^?]*)&/, '$1?'));
    expect(without.status).toBe(200);
    const shape = (body: any): unknown => ('data' in body && Array.isArray(body.data) ? body.data.map((item: { id?: string }) => item.id ?? item) : body);
    expect(shape(withEmpty.body)).toEqual(shape(without.body));
  });
});

describe('numeric environment settings', () => {
  it.each([
    ['TOLLGATE_MAX_BODY_BYTES', '0x10'],
    ['TOLLGATE_MAX_BODY_BYTES', '1e6'],
    ['TOLLGATE_MAX_BODY_BYTES', '10mb'],
    ['TOLLGATE_MAX_BODY_BYTES', '1048576.0'],
    ['TOLLGATE_FIRST_BYTE_TIMEOUT_MS', '0x7530'],
    ['TOLLGATE_SHUTDOWN_GRACE_MS', '0b101'],
    ['TOLLGATE_MAX_RESPONSE_BYTES', '0o4000'],
  ])('%s=%s stops the start with a line naming the variable', async (name, value) => {
    let started: RunningGateway | undefined;
    let failure: unknown;
    try {
      started = await startGateway({}, { [name]: value });
    } catch (err) {
      failure = err;
    }
    if (started) {
      const settings = (await new AdminClient(started.url).get('/api/config')).body.settings;
      await started.stop();
      expect.fail(`${name}=${value} started the gateway with settings ${JSON.stringify(settings)}`);
    }
    expect(String(failure)).toContain(`${name}: expected an integer`);
  });

  it('a decimal integer still works', async () => {
    const started = await startGateway({}, { TOLLGATE_MAX_BODY_BYTES: '1048576', TOLLGATE_FIRST_BYTE_TIMEOUT_MS: '30000' });
    try {
      const settings = (await new AdminClient(started.url).get('/api/config')).body.settings;
      expect(settings.max_body_bytes).toBe(1_048_576);
      expect(settings.upstream_timeouts.first_byte_ms).toBe(30_000);
    } finally {
      await started.stop();
    }
  });
});

describe('a PATCH that leaves an empty object below a section', () => {
  async function state(): Promise<{ version: number; audit: number }> {
    const config = await admin.get('/api/config');
    const audit = await admin.get('/api/audit?limit=500');
    return { version: config.body.version as number, audit: (audit.body.data as unknown[]).length };
  }

  it('is no new version and no audit entry', async () => {
    const before = await state();
    for (const patch of [{ settings: { upstream_timeouts: {} } }, { settings: { upstream_timeouts: {}, log_bodies: {} } }, { settings: { metrics: {} } }]) {
      const res = await admin.patch('/api/config', patch, { contentType: 'application/merge-patch+json' });
      expect(res.status, res.text).toBe(200);
    }
    expect(await state()).toEqual(before);
    const layer = await admin.get('/api/config?layer=api');
    expect(layer.body.settings?.upstream_timeouts).toBeUndefined();
  });

  it('still records a value pinned beside it, even one equal to what it inherits', async () => {
    const before = await state();
    const inherited = (await admin.get('/api/config')).body.settings.upstream_timeouts.first_byte_ms as number;
    const res = await admin.patch('/api/config', { settings: { upstream_timeouts: { first_byte_ms: inherited }, log_bodies: {} } }, { contentType: 'application/merge-patch+json' });
    expect(res.status, res.text).toBe(200);
    const after = await state();
    expect(after.version).toBe(before.version + 1);
    expect(after.audit).toBe(before.audit + 1);
    expect((await admin.get('/api/config?layer=api')).body.settings.upstream_timeouts).toEqual({ first_byte_ms: inherited });
  });
});
