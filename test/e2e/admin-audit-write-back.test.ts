import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * README "Management API": what a client reads it can write back unchanged, and a PUT/PATCH that sets what is
 * already set (a change that changes nothing in effect) is no new version: no audit entry, no `config.changed`.
 *
 * 1. `PUT /api/providers/:name` with the provider's own `GET` answer made a new version and a `provider.replaced`
 *    entry, and copied the values the provider inherits from `settings` (timeouts, max_response_bytes) and from the
 *    file (headers, models) into the API layer: a later change of `settings.upstream_timeouts` moved every provider
 *    but this one.
 * 2. `PATCH /api/config {"routes": {}}`, or one deleting a route only the file defines, made a new version and an
 *    audit entry although nothing changed in effect.
 */

let upstream: ScriptedUpstream;
let gw: RunningGateway;
let admin: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  gw = await startGateway({
    settings: { upstream_timeouts: { first_byte_ms: 30_000, total_ms: 600_000 } },
    providers: {
      lab: {
        type: 'openai',
        base_url: `${upstream.url}/v1`,
        api_key: 'sk-file-lab-0001',
        headers: { 'x-team': 'research' },
        timeouts: { total_ms: 90_000 },
        models: ['m'],
        prices: { m: { input_per_mtok: 1, output_per_mtok: 2 }, n: { input_per_mtok: 3, output_per_mtok: 4 } },
      },
    },
    routes: { chat: { targets: [{ model: 'lab/m' }] } },
  });
  admin = new AdminClient(gw.url);
});

afterAll(async () => {
  await gw?.stop();
  await upstream?.close();
});

async function version(): Promise<number> {
  const res = await admin.get('/api/config');
  expect(res.status).toBe(200);
  return res.body.version as number;
}

async function auditCount(): Promise<number> {
  const res = await admin.get('/api/audit?limit=500');
  expect(res.status).toBe(200);
  return (res.body.data as unknown[]).length;
}

async function provider(name: string): Promise<any> {
  const res = await admin.get(`/api/providers/${name}`);
  expect(res.status).toBe(200);
  return res.body;
}

async function patchSettings(firstByteMs: number, maxResponseBytes: number): Promise<void> {
  const res = await admin.patch('/api/config', { settings: { upstream_timeouts: { first_byte_ms: firstByteMs }, max_response_bytes: maxResponseBytes } }, { contentType: 'application/merge-patch+json' });
  expect(res.status).toBe(200);
}

describe('writing a provider back as read', () => {
  it('is no new version, no audit entry, and pins nothing the provider inherits', async () => {
    const read = await provider('lab');
    expect(read.source).toBe('file');
    expect(read.timeouts).toEqual({ first_byte_ms: 30_000, total_ms: 90_000, idle_ms: expect.any(Number) });

    const versionBefore = await version();
    const entriesBefore = await auditCount();
    const put = await admin.put('/api/providers/lab', read);
    expect(put.status).toBe(200);
    expect(await version()).toBe(versionBefore);
    expect(await auditCount()).toBe(entriesBefore);
    const layer = await admin.get('/api/config?layer=api');
    expect(layer.body.providers?.lab?.timeouts).toBeUndefined();
    expect(layer.body.providers?.lab?.max_response_bytes).toBeUndefined();
    expect(layer.body.providers?.lab?.headers).toBeUndefined();

    // The inherited values still follow settings; the file's own total_ms stays the file's.
    await patchSettings(45_000, 1_048_576);
    const after = await provider('lab');
    expect(after.timeouts.first_byte_ms).toBe(45_000);
    expect(after.timeouts.total_ms).toBe(90_000);
    expect(after.max_response_bytes).toBe(1_048_576);
    expect(after.headers).toEqual({ 'x-team': 'research' });

    // The provider still serves, through its file key.
    const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 15_000 });
    const answer = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.choices[0]?.message.content).toBe('echo: hi');
  });

  it('holds for a provider the API defines, and what the API set stays set', async () => {
    const created = await admin.put('/api/providers/lab-api', { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-api-lab-0002', max_response_bytes: 2_097_152 });
    expect(created.status).toBe(201);
    const read = await provider('lab-api');
    expect(read.source).toBe('api');

    const versionBefore = await version();
    const entriesBefore = await auditCount();
    const put = await admin.put('/api/providers/lab-api', read);
    expect(put.status).toBe(200);
    expect(put.body.keys).toEqual(read.keys);
    expect(await version()).toBe(versionBefore);
    expect(await auditCount()).toBe(entriesBefore);

    await patchSettings(46_000, 1_048_577);
    const after = await provider('lab-api');
    expect(after.timeouts.first_byte_ms).toBe(46_000);
    // Set through the API, so not inherited: it stays.
    expect(after.max_response_bytes).toBe(2_097_152);
  });

  it('a PUT that really changes an inherited field sets that field, and only it', async () => {
    const read = await provider('lab');
    const versionBefore = await version();
    const entriesBefore = await auditCount();
    const put = await admin.put('/api/providers/lab', { ...read, timeouts: { ...read.timeouts, first_byte_ms: 7_777 } });
    expect(put.status).toBe(200);
    expect(put.body.timeouts.first_byte_ms).toBe(7_777);
    expect(await version()).toBe(versionBefore + 1);
    expect(await auditCount()).toBe(entriesBefore + 1);
    const audit = await admin.get('/api/audit?limit=1');
    expect(audit.body.data[0]).toMatchObject({ action: 'provider.replaced', target: 'providers.lab' });
    const layer = await admin.get('/api/config?layer=api');
    expect(layer.body.providers.lab.timeouts).toEqual({ first_byte_ms: 7_777 });
    expect(layer.body.providers.lab.max_response_bytes).toBeUndefined();
    expect(layer.body.providers.lab.headers).toBeUndefined();
    expect(layer.body.providers.lab.prices).toBeUndefined();

    // Written back as read again: still no new version, and the field set stays set.
    const again = await provider('lab');
    const v = await version();
    expect((await admin.put('/api/providers/lab', again)).status).toBe(200);
    expect(await version()).toBe(v);

    await patchSettings(47_000, 1_048_578);
    const after = await provider('lab');
    expect(after.timeouts.first_byte_ms).toBe(7_777);
    expect(after.max_response_bytes).toBe(1_048_578);
    expect(after.timeouts.idle_ms).toBe(read.timeouts.idle_ms);
  });
});

describe('a PATCH of routes that changes nothing in effect', () => {
  it('is no new version and no audit entry', async () => {
    const layer = await admin.get('/api/config?layer=api');
    expect(layer.body.routes ?? {}).toEqual({});
    const versionBefore = await version();
    const entriesBefore = await auditCount();

    const empty = await admin.patch('/api/config', { routes: {} }, { contentType: 'application/merge-patch+json' });
    expect(empty.status).toBe(200);
    expect(await version()).toBe(versionBefore);
    expect(await auditCount()).toBe(entriesBefore);

    // The route is the file's: the API has none of that name to delete.
    const fileOnly = await admin.patch('/api/config', { routes: { chat: null } }, { contentType: 'application/merge-patch+json' });
    expect(fileOnly.status).toBe(200);
    expect(await version()).toBe(versionBefore);
    expect(await auditCount()).toBe(entriesBefore);
    expect((await admin.get('/api/routes/chat')).body.source).toBe('file');
  });

  it('still records deleting an API route that shadows the file route of that name', async () => {
    const fileRoute = (await admin.get('/api/routes/chat')).body;
    const shadow = await admin.put('/api/routes/chat', fileRoute);
    expect(shadow.status).toBe(200);
    expect(shadow.body.source).toBe('api');

    const versionBefore = await version();
    const entriesBefore = await auditCount();
    const removed = await admin.patch('/api/config', { routes: { chat: null } }, { contentType: 'application/merge-patch+json' });
    expect(removed.status).toBe(200);
    expect(await version()).toBe(versionBefore + 1);
    expect(await auditCount()).toBe(entriesBefore + 1);
    expect((await admin.get('/api/routes/chat')).body.source).toBe('file');
  });
});

describe('what the layers merge entry by entry', () => {
  it('a changed header or price is set alone; the others stay the file\'s', async () => {
    const read = await provider('lab');
    const put = await admin.put('/api/providers/lab', {
      ...read,
      headers: { ...read.headers, 'x-extra': 'on' },
      prices: { ...read.prices, m: { ...read.prices.m, output_per_mtok: 5 } },
    });
    expect(put.status).toBe(200);
    const layer = (await admin.get('/api/config?layer=api')).body.providers.lab;
    expect(layer.headers).toEqual({ 'x-extra': 'on' });
    expect(layer.prices).toEqual({ m: { input_per_mtok: 1, output_per_mtok: 5 } });
    const after = await provider('lab');
    expect(after.headers).toEqual({ 'x-team': 'research', 'x-extra': 'on' });
    expect(after.prices.n).toEqual({ input_per_mtok: 3, output_per_mtok: 4 });
  });

  it('PUT /api/config with the whole view, one file price changed, sets that price whole', async () => {
    const view = (await admin.get('/api/config')).body;
    const lab = view.providers.find((item: { name: string }) => item.name === 'lab');
    lab.prices.n = { ...lab.prices.n, output_per_mtok: 6 };
    const put = await admin.put('/api/config', view);
    expect(put.status).toBe(200);
    const layer = (await admin.get('/api/config?layer=api')).body.providers.lab;
    expect(layer.prices).toEqual({ m: { input_per_mtok: 1, output_per_mtok: 5 }, n: { input_per_mtok: 3, output_per_mtok: 6 } });
    expect((await provider('lab')).prices.n).toEqual({ input_per_mtok: 3, output_per_mtok: 6 });
  });

  it("the dashboard's provider form (a merge patch of the fields it changed) is still a change", async () => {
    const v = await version();
    const patched = await admin.patch('/api/config', { providers: { lab: { base_url: `${upstream.url}/v1/` } } }, { contentType: 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    expect(await version()).toBe(v + 1);
    const audit = await admin.get('/api/audit?limit=1');
    expect(audit.body.data[0]).toMatchObject({ action: 'config.patched' });
  });
});
