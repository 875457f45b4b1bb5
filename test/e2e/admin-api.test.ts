import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { ConfigFile } from '../../src/config/schema.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { AdminClient, type AdminResponse } from '../helpers/admin.js';

let a: ScriptedUpstream;
let b: ScriptedUpstream;
let tg: RunningGateway;
let api: AdminClient;

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];
const FILE_KEY = 'sk-file-defined-key-0000aaaa';

/** What the "config file" holds in these tests: one provider and one route, so 409s can be shown. */
function fileConfig(): ConfigFile {
  return {
    providers: { filed: { type: 'openai', base_url: `${a.url}/v1`, keys: [{ value: FILE_KEY, weight: 1 }] } },
    routes: { 'file-route': { targets: [{ model: 'filed/from-file', weight: 1 }], fallbacks: [] } },
  };
}

beforeAll(async () => {
  a = await startOpenAIUpstream({ apiKey: null });
  b = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await a.close();
  await b.close();
});
beforeEach(async () => {
  a.reset();
  b.reset();
  tg = await startGateway(fileConfig());
  api = new AdminClient(tg.url);
});
afterEach(async () => {
  await tg.stop();
});

function chat(model: string): Promise<OpenAI.ChatCompletion> {
  return tg.client.chat.completions.create({ model, messages });
}

/** The upstream model of the last call an upstream received. */
function lastModel(upstream: ScriptedUpstream): string | undefined {
  return upstream.calls.at(-1)?.body.model;
}

function expectOpenAIError(response: AdminResponse, status: number, fields: { code?: string | null; param?: string | null; type?: string } = {}): void {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  expect(Object.keys(response.body)).toEqual(['error']);
  expect(Object.keys(response.body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof response.body.error.message).toBe('string');
  expect(response.body.error).toMatchObject(fields);
}

async function putLabA(baseUrl = `${a.url}/v1`, extra: Record<string, unknown> = {}): Promise<AdminResponse> {
  return api.put('/api/providers/lab-a', { type: 'openai', base_url: baseUrl, ...extra });
}

async function version(): Promise<number> {
  return (await api.get('/api/config')).body.version;
}

describe('GET /api/config and /api/config/schema', () => {
  it('shows the effective config with each item tagged by its source', async () => {
    const res = await api.get('/api/config');
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ precedence: ['api', 'file', 'env', 'builtin'], file: null });
    expect(typeof res.body.version).toBe('number');
    expect(res.body.settings).toHaveProperty('max_body_bytes');
    const filed = res.body.providers.find((p: any) => p.name === 'filed');
    expect(filed).toMatchObject({ type: 'openai', base_url: `${a.url}/v1`, source: 'file' });
    expect(filed.keys[0]).toMatchObject({ value: '****aaaa', source: 'file' });
    expect(res.body.providers.find((p: any) => p.name === 'openai')).toMatchObject({ source: 'builtin' });
    expect(res.body.routes).toEqual([{ name: 'file-route', targets: [{ model: 'filed/from-file', weight: 1 }], fallbacks: [], source: 'file' }]);
  });

  it('shows the API layer alone with ?layer=api, and refuses an unknown layer', async () => {
    expect(await api.get('/api/config?layer=api')).toMatchObject({ status: 200, body: {} });
    expect((await api.get('/api/config?layer=effective')).body.precedence).toBeDefined();
    expectOpenAIError(await api.get('/api/config?layer=nope'), 400, { param: 'layer' });
  });

  it('publishes the JSON Schema', async () => {
    const res = await api.get('/api/config/schema');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('json');
    expect(res.body.properties).toHaveProperty('providers');
    expect(res.body.properties).toHaveProperty('routes');
    expect(res.body.properties).toHaveProperty('settings');
  });
});

describe('PUT and PATCH /api/config', () => {
  it('replaces the API layer with PUT; the next request uses it', async () => {
    const before = await version();
    const res = await api.put('/api/config', {
      providers: { 'lab-a': { type: 'openai', base_url: `${a.url}/v1` } },
      routes: { chat: { targets: [{ model: 'lab-a/m1', weight: 1 }] } },
    });
    expect(res.status).toBe(200);
    expect(res.body.version).toBeGreaterThan(before);
    expect(res.body.routes.find((r: any) => r.name === 'chat')).toMatchObject({ source: 'api' });
    await chat('chat');
    expect(lastModel(a)).toBe('m1');
    expect((await api.get('/api/config?layer=api')).body).toMatchObject({
      providers: { 'lab-a': { type: 'openai', base_url: `${a.url}/v1` } },
      routes: { chat: { targets: [{ model: 'lab-a/m1', weight: 1 }] } },
    });

    // PUT is whole: an empty document removes what the API had set, and the file's items remain.
    expect((await api.put('/api/config', {})).status).toBe(200);
    expect((await api.get('/api/config?layer=api')).body).toEqual({});
    expectOpenAIError(await api.get('/api/providers/lab-a'), 404);
    expect((await api.get('/api/providers/filed')).status).toBe(200);
  });

  it('merges with PATCH (application/merge-patch+json or application/json); null deletes', async () => {
    await putLabA();
    expect((await api.put('/api/routes/chat', { targets: [{ model: 'lab-a/m1' }] })).status).toBe(201);

    const patched = await api.patch('/api/config', { routes: { chat: { targets: [{ model: 'lab-a/m2' }] } }, settings: { max_body_bytes: 50_000 } }, {
      contentType: 'application/merge-patch+json',
    });
    expect(patched.status).toBe(200);
    expect(patched.body.settings.max_body_bytes).toBe(50_000);
    await chat('chat');
    expect(lastModel(a)).toBe('m2');

    expect((await api.patch('/api/config', { routes: { chat: null } })).status).toBe(200);
    expectOpenAIError(await api.get('/api/routes/chat'), 404);
    await expect(chat('chat')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    // The provider set earlier through the API is untouched by a patch that does not name it.
    expect((await api.get('/api/providers/lab-a')).body.source).toBe('api');
  });

  it("replaces the provider's key when a PATCH sets its api_key: the old key is not left in rotation", async () => {
    expect((await api.patch('/api/config', { providers: { 'lab-k': { type: 'openai', base_url: `${a.url}/v1`, api_key: 'sk-first-key-0001' } } })).status).toBe(200);
    // The key renewed the way it was set.
    expect((await api.patch('/api/config', { providers: { 'lab-k': { api_key: 'sk-second-key-0002' } } })).status).toBe(200);
    const keys = (await api.get('/api/providers/lab-k/keys')).body.data as Array<{ value: string }>;
    expect(keys.map((key) => key.value)).toEqual(['****0002']);
    for (let i = 0; i < 3; i++) await chat('lab-k/m');
    expect(a.calls.map((call) => call.headers.authorization)).toEqual(Array(3).fill('Bearer sk-second-key-0002'));
    // A patch that sets keys too gets both, as in the config file.
    expect((await api.patch('/api/config', { providers: { 'lab-k': { api_key: 'sk-third-key-0003', keys: [{ value: 'sk-fourth-key-0004' }] } } })).status).toBe(200);
    expect(((await api.get('/api/providers/lab-k/keys')).body.data as Array<{ value: string }>).map((key) => key.value)).toEqual(['****0003', '****0004']);
  });

  it('rejects an invalid document whole, naming the field, and keeps the running config', async () => {
    await putLabA();
    const before = await version();
    const bad = await api.put('/api/config', { providers: { 'lab-a': { type: 'openai', base_url: 'not a url' } } });
    expectOpenAIError(bad, 400, { param: 'providers.lab-a.base_url', type: 'invalid_request_error' });
    expect(bad.body.error.message).toContain('base_url');

    const unknownField = await api.patch('/api/config', { setings: { port: 1 } }, { contentType: 'application/merge-patch+json' });
    expectOpenAIError(unknownField, 400);
    expect(unknownField.body.error.message).toContain('setings');

    const badRoute = await api.patch('/api/config', { routes: { r: { targets: [{ model: 'nosuch/m' }] } } });
    expectOpenAIError(badRoute, 400, { param: 'routes.r.targets.0.model' });

    expectOpenAIError(await api.patch('/api/config', [1, 2]), 400);
    expect(await version()).toBe(before);
    await chat('lab-a/still-works');
    expect(lastModel(a)).toBe('still-works');
  });

  it('refuses missing, malformed and non-JSON bodies clearly', async () => {
    expectOpenAIError(await api.put('/api/config'), 400, { code: 'invalid_json' });
    expectOpenAIError(await api.put('/api/config', undefined, { raw: '{"providers": ' }), 400, { code: 'invalid_json' });
    expectOpenAIError(await api.patch('/api/config', undefined, { raw: '{oops', contentType: 'application/merge-patch+json' }), 400, { code: 'invalid_json' });
    expectOpenAIError(await api.put('/api/config', undefined, { raw: 'providers: {}', contentType: 'text/plain' }), 415);
    expectOpenAIError(await api.put('/api/config', undefined, { raw: '"a string"' }), 400);
  });

  it('refuses a body that is not UTF-8 (merge patch or JSON) with a 400, storing nothing', async () => {
    /** JSON texts whose string value holds `middle`: the bytes 0xff 0xfe are no UTF-8 (decoded, each became U+FFFD). */
    const BAD = Buffer.from([0xff, 0xfe]);
    const patchWith = (middle: Buffer): Buffer => Buffer.concat([Buffer.from('{"routes": {"utf8-route": {"targets": [{"model": "filed/m'), middle, Buffer.from('"}]}}, "settings": {"max_body_bytes": 50000}}')]);
    const keyWith = (middle: Buffer): Buffer => Buffer.concat([Buffer.from('{"name": "key-'), middle, Buffer.from('"}')]);
    const config = await api.get('/api/config');
    const keys = await api.get('/api/keys');
    for (const contentType of ['application/merge-patch+json', 'application/json']) {
      const patched = await api.patch('/api/config', undefined, { raw: patchWith(BAD), contentType });
      expectOpenAIError(patched, 400, { code: 'invalid_body', type: 'invalid_request_error' });
      expect(patched.body.error.message).toMatch(/not valid UTF-8/);
      const created = await api.post('/api/keys', undefined, { raw: keyWith(BAD), contentType });
      expectOpenAIError(created, 400, { code: 'invalid_body', type: 'invalid_request_error' });
      expect(created.body.error.message).toMatch(/not valid UTF-8/);
    }
    expect((await api.get('/api/config')).body).toEqual(config.body);
    expectOpenAIError(await api.get('/api/routes/utf8-route'), 404);
    expect((await api.get('/api/keys')).body).toEqual(keys.body);

    // The same bodies in UTF-8 are taken.
    const ok = Buffer.from('é');
    expect((await api.patch('/api/config', undefined, { raw: patchWith(ok), contentType: 'application/merge-patch+json' })).status).toBe(200);
    expect((await api.get('/api/routes/utf8-route')).body.targets[0].model).toBe('filed/mé');
    expect((await api.post('/api/keys', undefined, { raw: keyWith(ok), contentType: 'application/merge-patch+json' })).status).toBe(201);
  });
});

describe('/api/providers', () => {
  it('creates (201), replaces (200), reads, lists and deletes (204) a provider; each change serves the next request', async () => {
    const created = await putLabA();
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/api/providers/lab-a');
    expect(created.body).toMatchObject({ name: 'lab-a', type: 'openai', base_url: `${a.url}/v1`, keys: [], source: 'api' });

    const completion = await chat('lab-a/some-model');
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(lastModel(a)).toBe('some-model');

    const replaced = await putLabA(`${b.url}/v1`, { timeouts: { first_byte_ms: 4000 }, models: ['listed-model'] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ base_url: `${b.url}/v1`, models: ['listed-model'] });
    expect(replaced.body.timeouts.first_byte_ms).toBe(4000);
    await chat('lab-a/some-model');
    expect(b.calls).toHaveLength(1);
    expect(a.calls).toHaveLength(1);

    expect((await api.get('/api/providers/lab-a')).body).toEqual(replaced.body);
    const list = await api.get('/api/providers');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.data.map((p: any) => p.name)).toEqual(expect.arrayContaining(['lab-a', 'filed', 'openai']));

    const deleted = await api.delete('/api/providers/lab-a');
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expectOpenAIError(await api.get('/api/providers/lab-a'), 404);
    await expect(chat('lab-a/some-model')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expectOpenAIError(await api.delete('/api/providers/lab-a'), 404);
  });

  it('answers 404 for an unknown provider and 409 when the provider comes from the file or is built in', async () => {
    expectOpenAIError(await api.get('/api/providers/nosuch'), 404);
    expectOpenAIError(await api.delete('/api/providers/nosuch'), 404);
    const fromFile = await api.delete('/api/providers/filed');
    expectOpenAIError(fromFile, 409);
    expect(fromFile.body.error.message).toMatch(/config file/);
    expectOpenAIError(await api.delete('/api/providers/openai'), 409);
    await chat('filed/ok');
    expect(lastModel(a)).toBe('ok');
  });

  it('rejects invalid provider bodies naming the field, leaving the running provider as it was', async () => {
    await putLabA();
    const before = await version();
    const cases: Array<[string, unknown, string | null]> = [
      ['/api/providers/lab-a', { type: 'openai', base_url: 'not a url' }, 'providers.lab-a.base_url'],
      ['/api/providers/lab-a', { type: 'openai', base_url: 'ftp://example.com' }, 'providers.lab-a.base_url'],
      ['/api/providers/lab-a', { type: 'openai', keys: [{ value: 'sk-some-key-123456', weight: -1 }] }, 'providers.lab-a.keys.0.weight'],
      ['/api/providers/lab-a', { type: 'openai', keys: [{ weight: 1 }] }, 'providers.lab-a.keys.0.value'],
      ['/api/providers/lab-a', { type: 'no-such-wire-format' }, 'providers.lab-a.type'],
      ['/api/providers/lab-a', { type: 'openai', timeouts: { total_ms: -5 } }, 'providers.lab-a.timeouts.total_ms'],
      ['/api/providers/Lab%20A', { type: 'openai' }, 'name'],
    ];
    for (const [path, body, param] of cases) {
      const res = await api.put(path, body);
      expectOpenAIError(res, 400, { param, type: 'invalid_request_error' });
    }
    const unknownField = await api.put('/api/providers/lab-a', { type: 'openai', base_uri: `${b.url}/v1` });
    expectOpenAIError(unknownField, 400);
    expect(unknownField.body.error.message).toContain('base_uri');

    expect(await version()).toBe(before);
    expect((await api.get('/api/providers/lab-a')).body.base_url).toBe(`${a.url}/v1`);
    await chat('lab-a/after-bad-changes');
    expect(lastModel(a)).toBe('after-bad-changes');
    expect(b.calls).toHaveLength(0);
  });
});

describe('/api/providers/:provider/keys', () => {
  it('adds, lists, patches and deletes a key; the next request uses it', async () => {
    await putLabA();
    await chat('lab-a/m');
    expect(a.calls[0]?.headers.authorization).toBeUndefined();

    const added = await api.post('/api/providers/lab-a/keys', { value: 'sk-lab-a-first-key-0001' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ value: '****0001', weight: 1, models: null, source: 'api' });
    const id: string = added.body.id;
    expect(id).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(added.headers.get('location')).toBe(`/api/providers/lab-a/keys/${id}`);
    await chat('lab-a/m');
    expect(a.calls[1]?.headers.authorization).toBe('Bearer sk-lab-a-first-key-0001');

    const list = await api.get('/api/providers/lab-a/keys');
    expect(list.body).toEqual({ object: 'list', data: [added.body] });
    expect((await api.get(`/api/providers/lab-a/keys/${id}`)).body).toEqual(added.body);
    expectOpenAIError(await api.get('/api/providers/lab-a/keys/nope'), 404);

    const patched = await api.patch(`/api/providers/lab-a/keys/${id}`, { value: 'sk-lab-a-second-key-0002', weight: 3, models: ['m'] });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id, value: '****0002', weight: 3, models: ['m'] });
    await chat('lab-a/m');
    expect(a.calls[2]?.headers.authorization).toBe('Bearer sk-lab-a-second-key-0002');
    // The key now serves only model `m`.
    await expect(chat('lab-a/other')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    expect((await api.patch(`/api/providers/lab-a/keys/${id}`, { models: null })).body.models).toBeNull();

    const deleted = await api.delete(`/api/providers/lab-a/keys/${id}`);
    expect(deleted.status).toBe(204);
    await chat('lab-a/m');
    expect(a.calls.at(-1)?.headers.authorization).toBeUndefined();
    expectOpenAIError(await api.delete(`/api/providers/lab-a/keys/${id}`), 404);
  });

  it('validates key bodies, and answers 404/409 as appropriate', async () => {
    await putLabA();
    const { body: key } = await api.post('/api/providers/lab-a/keys', { value: 'sk-valid-key-123456' });
    const before = await version();
    expectOpenAIError(await api.post('/api/providers/lab-a/keys', { weight: 1 }), 400, { param: 'providers.lab-a.keys.value' });
    expectOpenAIError(await api.post('/api/providers/lab-a/keys', { value: 'sk-x-123456789', weight: 0 }), 400, { param: 'providers.lab-a.keys.weight' });
    expectOpenAIError(await api.patch(`/api/providers/lab-a/keys/${key.id}`, { weight: -1 }), 400, { param: `providers.lab-a.keys.${key.id}.weight` });
    expectOpenAIError(await api.patch(`/api/providers/lab-a/keys/${key.id}`, { colour: 'red' }), 400);
    expectOpenAIError(await api.post('/api/providers/lab-a/keys'), 400, { code: 'invalid_json' });
    expect(await version()).toBe(before);

    expectOpenAIError(await api.post('/api/providers/nosuch/keys', { value: 'sk-x-123456789' }), 404);
    expectOpenAIError(await api.patch('/api/providers/nosuch/keys/x', { weight: 1 }), 404);
    expectOpenAIError(await api.patch('/api/providers/lab-a/keys/nope', { weight: 1 }), 404);
    expectOpenAIError(await api.delete('/api/providers/lab-a/keys/nope'), 404);

    const fileKey = (await api.get('/api/providers/filed')).body.keys[0];
    expectOpenAIError(await api.patch(`/api/providers/filed/keys/${fileKey.id}`, { weight: 2 }), 409);
    expectOpenAIError(await api.delete(`/api/providers/filed/keys/${fileKey.id}`), 409);

    await chat('lab-a/m');
    expect(a.calls.at(-1)?.headers.authorization).toBe('Bearer sk-valid-key-123456');
  });
});

describe('provider key ids', () => {
  it('are one key each: a PUT or PATCH giving two keys of a provider the same id is refused, naming the field', async () => {
    const fileKeyId = (await api.get('/api/providers/filed')).body.keys[0].id as string;
    const before = await version();
    // Two keys of one body under one id.
    expectOpenAIError(await putLabA(`${a.url}/v1`, { keys: [{ id: 'k1', value: 'sk-first-00000001' }, { id: 'k1', value: 'sk-second-0000002' }] }), 400, {
      code: 'invalid_config',
      param: 'providers.lab-a.keys.1.id',
    });
    // A key set through the API under the id of the file's key: the API could never address it (the file's key
    // answers to the id), and the two would share one breaker.
    const clash = await api.put('/api/providers/filed', { keys: [{ id: fileKeyId, value: 'sk-api-key-0000003' }] });
    expectOpenAIError(clash, 400, { code: 'invalid_config', param: 'providers.filed.keys.0.id' });
    expect(clash.body.error.message).toContain(fileKeyId);
    expectOpenAIError(await api.patch('/api/config', { providers: { filed: { keys: [{ id: fileKeyId, value: 'sk-api-key-0000003' }] } } }), 400, {
      param: 'providers.filed.keys.0.id',
    });
    expect(await version()).toBe(before);
    expect((await api.get('/api/providers/filed')).body.keys).toHaveLength(1);
  });
});

describe('/api/routes', () => {
  it('creates a weighted route, replaces it, and each version serves the next request', async () => {
    await putLabA();
    const created = await api.put('/api/routes/chat-default', {
      targets: [
        { model: 'lab-a/m1', weight: 1 },
        { model: 'lab-a/m2', weight: 1 },
      ],
      fallbacks: ['filed/backup'],
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe('/api/routes/chat-default');
    expect(created.body).toEqual({
      name: 'chat-default',
      targets: [
        { model: 'lab-a/m1', weight: 1 },
        { model: 'lab-a/m2', weight: 1 },
      ],
      fallbacks: ['filed/backup'],
      source: 'api',
    });
    for (let i = 0; i < 20; i++) await chat('chat-default');
    expect(new Set(a.calls.map((call) => call.body.model))).toEqual(new Set(['m1', 'm2']));

    const replaced = await api.put('/api/routes/chat-default', { targets: [{ model: 'lab-a/m3', weight: 5 }] });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ targets: [{ model: 'lab-a/m3', weight: 5 }], fallbacks: [] });
    await chat('chat-default');
    expect(lastModel(a)).toBe('m3');

    expect((await api.get('/api/routes/chat-default')).body).toEqual(replaced.body);
    const list = await api.get('/api/routes');
    expect(list.body.object).toBe('list');
    expect(list.body.data.map((r: any) => r.name).sort()).toEqual(['chat-default', 'file-route']);

    expect((await api.delete('/api/routes/chat-default')).status).toBe(204);
    expectOpenAIError(await api.get('/api/routes/chat-default'), 404);
    await expect(chat('chat-default')).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });

  it('addresses route names containing "/" URL-encoded (and plain)', async () => {
    await putLabA();
    const created = await api.put('/api/routes/openai%2Fgpt-4o', { targets: [{ model: 'lab-a/mini' }] });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('openai/gpt-4o');
    expect(created.headers.get('location')).toBe('/api/routes/openai%2Fgpt-4o');
    expect((await api.get('/api/routes/openai%2Fgpt-4o')).body).toEqual(created.body);
    expect((await api.get('/api/routes/openai/gpt-4o')).body).toEqual(created.body);
    await chat('openai/gpt-4o');
    expect(lastModel(a)).toBe('mini');

    const deep = await api.put(`/api/routes/${encodeURIComponent('openrouter/meta-llama/llama-3.1-8b')}`, { targets: [{ model: 'lab-a/llama' }] });
    expect(deep.body.name).toBe('openrouter/meta-llama/llama-3.1-8b');
    await chat('openrouter/meta-llama/llama-3.1-8b');
    expect(lastModel(a)).toBe('llama');

    expect((await api.delete('/api/routes/openai%2Fgpt-4o')).status).toBe(204);
    expectOpenAIError(await api.get('/api/routes/openai%2Fgpt-4o'), 404);
  });

  it('rejects invalid routes naming the field; the running route stays', async () => {
    await putLabA();
    await api.put('/api/routes/chat-default', { targets: [{ model: 'lab-a/good' }] });
    const before = await version();
    const cases: Array<[unknown, string]> = [
      [{ targets: [{ model: 'gpt-4o' }] }, 'routes.chat-default.targets.0.model'],
      [{ targets: [{ model: 'nosuch/gpt-4o' }] }, 'routes.chat-default.targets.0.model'],
      [{ targets: [{ model: 'lab-a/x', weight: 0 }] }, 'routes.chat-default.targets.0.weight'],
      [{ targets: [{ model: 'lab-a/x', weight: -2 }] }, 'routes.chat-default.targets.0.weight'],
      [{ targets: [] }, 'routes.chat-default.targets'],
      [{ targets: [{ model: 'lab-a/x' }], fallbacks: ['not-a-route'] }, 'routes.chat-default.fallbacks.0'],
    ];
    for (const [body, param] of cases) expectOpenAIError(await api.put('/api/routes/chat-default', body), 400, { param });
    expectOpenAIError(await api.put('/api/routes/bad%20name', { targets: [{ model: 'lab-a/x' }] }), 400, { param: 'name' });
    expect(await version()).toBe(before);
    await chat('chat-default');
    expect(lastModel(a)).toBe('good');
  });

  it('overrides a file route through the API; deleting the override brings the file route back; the file route itself is 409', async () => {
    await putLabA();
    expectOpenAIError(await api.delete('/api/routes/file-route'), 409);
    expectOpenAIError(await api.delete('/api/routes/nosuch'), 404);
    expectOpenAIError(await api.get('/api/routes/nosuch'), 404);

    const override = await api.put('/api/routes/file-route', { targets: [{ model: 'lab-a/override' }] });
    expect(override.status).toBe(200);
    expect(override.body.source).toBe('api');
    await chat('file-route');
    expect(lastModel(a)).toBe('override');

    const removed = await api.delete('/api/routes/file-route');
    // Deleting the override answers with the file's route, which is in force again.
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ source: 'file', targets: [{ model: 'filed/from-file' }] });
    expect((await api.get('/api/routes/file-route')).body).toMatchObject({ source: 'file', targets: [{ model: 'filed/from-file' }] });
    await chat('file-route');
    expect(lastModel(a)).toBe('from-file');
  });

  it('moves traffic to a new target while requests flow, with no failed request', async () => {
    await putLabA();
    await api.put('/api/providers/lab-b', { type: 'openai', base_url: `${b.url}/v1` });
    await api.put('/api/routes/live', { targets: [{ model: 'lab-a/on-a' }] });
    let failures = 0;
    let stop = false;
    const load = (async () => {
      while (!stop) await chat('live').catch(() => failures++);
    })();
    const until = async (condition: () => boolean): Promise<void> => {
      const deadline = Date.now() + 5000;
      while (!condition() && Date.now() < deadline) await new Promise((done) => setTimeout(done, 10));
    };
    await until(() => a.calls.length >= 5);
    expect((await api.put('/api/routes/live', { targets: [{ model: 'lab-b/on-b' }] })).status).toBe(200);
    const switchedAt = a.calls.length;
    await until(() => b.calls.length >= 5);
    stop = true;
    await load;
    expect(failures).toBe(0);
    expect(b.calls.length).toBeGreaterThanOrEqual(5);
    // At most the one request already in flight when the change landed went to a.
    expect(a.calls.length - switchedAt).toBeLessThanOrEqual(1);
    expect(b.calls.every((call) => call.body.model === 'on-b')).toBe(true);
  });
});

describe('GET /api/audit', () => {
  it('lists changes newest first with actor, masked before/after, and pages with before', async () => {
    await putLabA();
    const key = await api.post('/api/providers/lab-a/keys', { value: 'sk-audited-key-value-9876' });
    await api.put('/api/routes/r1', { targets: [{ model: 'lab-a/m' }] });
    await api.delete('/api/routes/r1');

    const page = await api.get('/api/audit?limit=3');
    expect(page.status).toBe(200);
    expect(page.body.object).toBe('list');
    const entries = page.body.data;
    expect(entries.map((e: any) => e.action)).toEqual(['route.deleted', 'route.created', 'provider_key.created']);
    expect(entries.map((e: any) => e.id)).toEqual([...entries.map((e: any) => e.id)].sort().reverse());
    const versions = entries.map((e: any) => e.version);
    expect(versions).toEqual([...versions].sort((x: number, y: number) => y - x));
    for (const entry of entries) {
      expect(entry.actor).toEqual({ kind: 'loopback', id: '127.0.0.1' });
      expect(Number.isNaN(Date.parse(entry.at))).toBe(false);
    }
    expect(entries[0]).toMatchObject({ target: 'routes.r1', before: { name: 'r1', targets: [{ model: 'lab-a/m', weight: 1 }] }, after: null });
    expect(entries[1]).toMatchObject({ target: 'routes.r1', before: null, after: { name: 'r1' } });
    expect(entries[2].target).toBe(`providers.lab-a.keys.${key.body.id}`);
    expect(JSON.stringify(entries[2].after)).toContain('****9876');
    expect(page.text).not.toContain('sk-audited-key-value');

    expect(page.body.next_before).toBe(entries[2].id);
    const next = await api.get(`/api/audit?limit=3&before=${encodeURIComponent(page.body.next_before)}`);
    expect(next.body.data.map((e: any) => e.action)).toEqual(['provider.created']);
    expect(next.body.next_before).toBeNull();

    const all = await api.get('/api/audit');
    expect(all.body.data).toHaveLength(4);
  });

  it('filters by action, target and time, in the list and the export alike', async () => {
    const mark = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await api.put('/api/routes/f1', { targets: [{ model: 'filed/m' }] })).status).toBe(201);
    expect((await api.put('/api/routes/f2', { targets: [{ model: 'filed/m' }] })).status).toBe(201);
    expect((await api.delete('/api/routes/f1')).status).toBe(204);
    const created = await api.get(`/api/audit?action=route.created&from=${mark}`);
    expect(created.body.data.map((e: any) => e.target)).toEqual(['routes.f2', 'routes.f1']);
    const f1 = await api.get('/api/audit?target=routes.f1');
    expect(f1.body.data.map((e: any) => e.action)).toEqual(['route.deleted', 'route.created']);
    // `routes` takes in every route's entries; a time range ending before the mark none of them.
    expect((await api.get(`/api/audit?target=routes&from=${mark}`)).body.data).toHaveLength(3);
    expect((await api.get(`/api/audit?target=routes&to=${mark}`)).body.data.every((e: any) => e.id < created.body.data[1].id)).toBe(true);
    // Paged one at a time, the filter still holds on every page.
    const first = await api.get(`/api/audit?action=route.created&from=${mark}&limit=1`);
    const second = await api.get(`/api/audit?action=route.created&from=${mark}&limit=1&before=${first.body.next_before}`);
    expect([...first.body.data, ...second.body.data].map((e: any) => e.target)).toEqual(['routes.f2', 'routes.f1']);
    const exported = await fetch(`${tg.url}/api/audit/export?format=jsonl&action=route.created&from=${mark}`);
    const lines = (await exported.text()).trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.map((e) => e.target)).toEqual(['routes.f2', 'routes.f1']);
    expectOpenAIError(await api.get(`/api/audit?from=${mark}&to=${mark - 1000}`), 400, { param: 'from' });
    expectOpenAIError(await api.get('/api/audit?from=yesterday'), 400, { param: 'from' });
  });

  it('refuses a bad limit', async () => {
    expectOpenAIError(await api.get('/api/audit?limit=abc'), 400, { param: 'limit' });
    expectOpenAIError(await api.get('/api/audit?limit=0'), 400, { param: 'limit' });
    expectOpenAIError(await api.get('/api/audit?limit=-3'), 400, { param: 'limit' });
    expect((await api.get('/api/audit?limit=100000')).status).toBe(200);
  });
});

describe('unknown /api paths', () => {
  it('answer 404 in the OpenAI shape', async () => {
    expectOpenAIError(await api.get('/api/nope'), 404, { code: 'unknown_url' });
    expectOpenAIError(await api.get('/api'), 404);
    expectOpenAIError(await api.get('/api/providers/lab-a/keys/x/y'), 404);
  });

  it('answer 405 naming the methods a served path takes, in the OpenAI shape', async () => {
    const wrong = await api.post('/api/providers', { x: 1 });
    expectOpenAIError(wrong, 405, { code: 'method_not_allowed' });
    expect(wrong.body.error.message).toBe('Method POST is not allowed on /api/providers; it takes GET, HEAD.');
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
  });
});
