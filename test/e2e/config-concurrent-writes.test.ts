import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { AdminClient } from '../helpers/admin.js';

/**
 * Two writers of the whole config: one reads GET /api/config, edits it and PUTs it back (the dashboard's settings
 * page) while another changes the config in between. With If-Match carrying the version (ETag) it read, the
 * first writer's stale document is refused with 412 instead of silently undoing the other's change.
 */

let tg: RunningGateway;
let api: AdminClient;

beforeAll(async () => {
  tg = await startGateway({ routes: { 'from-file': { targets: [{ model: 'openai/gpt-4o-mini' }] } } });
  api = new AdminClient(tg.url);
});
afterAll(() => tg.stop());

async function putProvider(name: string): Promise<void> {
  expect((await api.put(`/api/providers/${name}`, { type: 'openai', base_url: 'http://127.0.0.1:9/v1', keys: [{ value: `sk-${name}-0001` }] })).status).toBe(201);
}

describe('GET /api/config', () => {
  it('answers the version it shows as its ETag, for the whole view and the API layer alike', async () => {
    const view = await api.get('/api/config');
    expect(view.headers.get('etag')).toBe(`"${view.body.version}"`);
    expect((await api.get('/api/config?layer=api')).headers.get('etag')).toBe(`"${view.body.version}"`);
  });
});

describe('PUT /api/config with If-Match', () => {
  it('refuses a document read before another change with 412, keeping that change, and takes it at the current version', async () => {
    const read = await api.get('/api/config');
    const etag = read.headers.get('etag') ?? '';
    // Another administrator adds a provider meanwhile.
    await putProvider('added-meanwhile');
    const edited = { ...read.body, routes: [...read.body.routes, { name: 'mine', targets: [{ model: 'openai/gpt-4o' }] }] };
    const stale = await api.request('PUT', '/api/config', edited, { headers: { 'if-match': etag } });
    expect(stale.status).toBe(412);
    expect(stale.body.error.code).toBe('config_version_mismatch');
    expect(stale.body.error.message).toContain(`version ${read.body.version}`);
    const now = tg.gateway.configService.current();
    expect(now.providers.has('added-meanwhile')).toBe(true);
    expect(now.routes.has('mine')).toBe(false);

    // Read again, edited again, written at the version read: applied, and the answer's ETag is the new version.
    const fresh = await api.get('/api/config');
    const written = await api.request('PUT', '/api/config', { ...fresh.body, routes: [...fresh.body.routes, { name: 'mine', targets: [{ model: 'openai/gpt-4o' }] }] }, { headers: { 'if-match': fresh.headers.get('etag') ?? '' } });
    expect(written.status).toBe(200);
    expect(written.headers.get('etag')).toBe(`"${written.body.version}"`);
    expect(tg.gateway.configService.current().providers.has('added-meanwhile')).toBe(true);
    expect(tg.gateway.configService.current().routes.has('mine')).toBe(true);
  });

  it('takes a weak tag, a list of tags and *, and refuses a tag that is no version', async () => {
    const version = (await api.get('/api/config')).body.version as number;
    const patch = (ifMatch: string, days: number) => api.request('PATCH', '/api/config', { settings: { log_retention_days: days } }, { headers: { 'if-match': ifMatch } });
    expect((await patch(`W/"${version}"`, 11)).status).toBe(200);
    expect((await patch(`"1", "${version + 1}"`, 12)).status).toBe(200);
    expect((await patch('*', 13)).status).toBe(200);
    expect((await patch('"not-a-version"', 14)).status).toBe(412);
    expect(tg.gateway.configService.current().settings.logRetentionDays).toBe(13);
  });

  it('without If-Match, writes as before', async () => {
    const read = await api.get('/api/config');
    await putProvider('another');
    expect((await api.patch('/api/config', { settings: { log_retention_days: 20 } })).status).toBe(200);
    expect((await api.put('/api/config', read.body)).status).toBe(200);
  });
});
