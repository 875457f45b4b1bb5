import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { AdminClient } from '../helpers/admin.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let api: AdminClient;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  tg = await startGateway(
    {
      routes: { 'from-file': { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }] } },
      // A route's mcp policy may name only configured servers (a disabled one too: configured, never started).
      mcp: { servers: { docs: { type: 'http', url: 'http://127.0.0.1:9/mcp', disabled: true } } },
    },
    {},
  );
  api = new AdminClient(tg.url);
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const messages = [{ role: 'user' as const, content: 'hi' }];

describe('what a client reads it can write back', () => {
  it('accepts a provider exactly as GET returned it, keeping the real key and credential header', async () => {
    const created = await api.put('/api/providers/lab-r', {
      type: 'openai',
      base_url: `${upstream.url}/v1`,
      keys: [{ value: 'sk-roundtrip-secret-value-0001', weight: 2 }],
      headers: { 'x-api-key': 'hdr-roundtrip-secret-0002', 'x-team': 'blue' },
    });
    expect(created.status).toBe(201);
    const read = await api.get('/api/providers/lab-r');
    expect(read.body.keys[0].value).toBe('****0001');
    expect(read.body.headers['x-api-key']).toBe('****0002');
    const written = await api.put('/api/providers/lab-r', read.body);
    expect(written.status).toBe(200);
    await tg.client.chat.completions.create({ model: 'lab-r/m', messages });
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-roundtrip-secret-value-0001');
    expect(upstream.calls[0]?.headers['x-api-key']).toBe('hdr-roundtrip-secret-0002');
    expect(upstream.calls[0]?.headers['x-team']).toBe('blue');
  });

  it('accepts a provider whose base URL has credentials and was shown with the version path completed', async () => {
    const hostOnly = upstream.url.replace('http://', 'http://proxyuser:proxy-pass-0003@');
    expect((await api.put('/api/providers/lab-u', { type: 'openai', base_url: hostOnly, keys: [{ value: 'sk-u', weight: 1 }] })).status).toBe(201);
    const read = await api.get('/api/providers/lab-u');
    // Shown as requests go: the host with `/v1` completed, its credentials masked.
    expect(read.body.base_url).toBe(`${upstream.url.replace('http://', 'http://****@')}/v1`);
    const written = await api.put('/api/providers/lab-u', read.body);
    expect(written.status).toBe(200);
    await tg.client.chat.completions.create({ model: 'lab-u/m', messages });
    expect(upstream.calls[0]?.path).toBe('/v1/chat/completions');
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-u');
    // The stored URL kept its real credentials (the masked ones written back stood for them).
    expect(tg.gateway.configService.current().providers.get('lab-u')?.baseUrl).toBe(`${hostOnly}/v1`);
    const layer = await api.get('/api/config?layer=api');
    expect(JSON.stringify(layer.body)).not.toContain('proxy-pass-0003');
  });

  it('accepts a route exactly as GET returned it, and refuses a body naming another route', async () => {
    await api.put('/api/routes/rt', { targets: [{ model: 'openai/gpt-4o-mini', weight: 1 }] });
    const read = await api.get('/api/routes/rt');
    expect((await api.put('/api/routes/rt', read.body)).status).toBe(200);
    const renamed = await api.put('/api/routes/rt', { ...read.body, name: 'other' });
    expect(renamed.status).toBe(400);
    expect(renamed.body.error.param).toBe('name');
  });

  it("shows a route's mcp policy, so a route read and written back keeps its MCP tools", async () => {
    const mcp = { allow: ['docs'], mode: 'auto' };
    await api.put('/api/routes/agent', { targets: [{ model: 'openai/gpt-4o-mini' }], mcp });
    const read = await api.get('/api/routes/agent');
    expect(read.body.mcp).toEqual(mcp);
    expect((await api.get('/api/config')).body.routes.find((route: { name: string }) => route.name === 'agent').mcp).toEqual(mcp);
    expect((await api.put('/api/routes/agent', read.body)).status).toBe(200);
    expect(tg.gateway.configService.current().routes.get('agent')?.mcp).toEqual(mcp);
  });

  it("keeps a key's secret when a PATCH sends its masked value back as read, and refuses a masked value for a new key", async () => {
    expect((await api.put('/api/providers/lab-p', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ id: 'k1', value: 'sk-patched-secret-0007' }] })).status).toBe(201);
    const { id: _id, source: _source, models: _models, ...read } = (await api.get('/api/providers/lab-p/keys/k1')).body;
    expect(read).toEqual({ value: '****0007', weight: 1 });
    const patched = await api.patch('/api/providers/lab-p/keys/k1', { ...read, weight: 2 });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ value: '****0007', weight: 2 });
    await tg.client.chat.completions.create({ model: 'lab-p/m', messages });
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-patched-secret-0007');

    const other = await api.patch('/api/providers/lab-p/keys/k1', { value: '****9999' });
    expect(other.status).toBe(400);
    expect(other.body.error).toMatchObject({ code: 'masked_secret', param: 'providers.lab-p.keys.k1.value' });
    const added = await api.post('/api/providers/lab-p/keys', { value: '****0007' });
    expect(added.status).toBe(400);
    expect(added.body.error).toMatchObject({ code: 'masked_secret', param: 'providers.lab-p.keys.value' });
    expect(tg.gateway.configService.current().providers.get('lab-p')?.keys.map((key) => key.value)).toEqual(['sk-patched-secret-0007']);
  });

  it('refuses a masked value that stands for no stored secret', async () => {
    const response = await api.put('/api/providers/lab-m', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ value: '****abcd' }] });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('masked_secret');
    expect((await api.get('/api/providers/lab-m')).status).toBe(404);
  });
});

describe('honest answers', () => {
  it('answers 201 only when the provider or route did not exist in any source', async () => {
    expect((await api.put('/api/providers/groq', { base_url: `${upstream.url}/v1` })).status).toBe(200);
    expect((await api.put('/api/routes/from-file', { targets: [{ model: 'openai/gpt-4o' }] })).status).toBe(200);
    expect((await api.put('/api/routes/brand-new', { targets: [{ model: 'openai/gpt-4o' }] })).status).toBe(201);
  });

  it('deleting the API overrides of a built-in provider answers with the provider as it remains', async () => {
    await api.post('/api/providers/mistral/keys', { value: 'sk-mistral-override-0003' });
    const removed = await api.delete('/api/providers/mistral');
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ name: 'mistral', source: 'builtin', keys: [] });
    const gone = await api.put('/api/providers/temp', { type: 'openai', base_url: `${upstream.url}/v1` });
    expect(gone.status).toBe(201);
    expect((await api.delete('/api/providers/temp')).status).toBe(204);
  });

  it('refuses settings that only apply at start, naming the field', async () => {
    const version = (await api.get('/api/config')).body.version;
    for (const setting of ['port', 'host', 'data_dir']) {
      const response = await api.patch('/api/config', { settings: { [setting]: setting === 'port' ? 9999 : 'x' } });
      expect(response.status).toBe(400);
      expect(response.body.error.param).toBe(`settings.${setting}`);
    }
    expect((await api.get('/api/config')).body.version).toBe(version);
  });
});

describe("a provider from the config file, with a credential header, read and written back", () => {
  let fileGateway: RunningGateway;
  let fileApi: AdminClient;

  beforeAll(async () => {
    fileGateway = await startGateway({
      providers: {
        'lab-f': { type: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-file-key-0005', headers: { 'x-api-key': 'hdr-file-secret-0004', 'x-team': 'blue' } },
      },
    });
    fileApi = new AdminClient(fileGateway.url);
  });
  afterAll(() => fileGateway.stop());

  it("is accepted as the dashboard's edit form sends it (GET's body, the base URL changed), keeping the file's header", async () => {
    const read = await fileApi.get('/api/providers/lab-f');
    expect(read.body.headers).toEqual({ 'x-api-key': '****0004', 'x-team': 'blue' });
    const { name: _name, source: _source, ...rest } = read.body;
    const written = await fileApi.put('/api/providers/lab-f', { ...rest, base_url: `${upstream.url}/v1` });
    expect(written.status).toBe(200);
    await fileGateway.client.chat.completions.create({ model: 'lab-f/m', messages });
    expect(upstream.calls[0]?.headers['x-api-key']).toBe('hdr-file-secret-0004');
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-file-key-0005');
    // The headers stay the file's (a later save of the file changes them): the API layer holds no copy of them, only
    // the field the form changed.
    const layer = await fileApi.get('/api/config?layer=api');
    expect(layer.body.providers['lab-f'].headers).toBeUndefined();
    expect(layer.body.providers['lab-f'].base_url).toBe(`${upstream.url}/v1`);
  });

  it('is accepted by PATCH /api/config with the masked header as read, the other header changed', async () => {
    const patched = await fileApi.patch('/api/config', { providers: { 'lab-f': { headers: { 'x-api-key': '****0004', 'x-team': 'green' } } } });
    expect(patched.status).toBe(200);
    expect(fileGateway.gateway.configService.current().providers.get('lab-f')?.headers).toEqual({ 'x-api-key': 'hdr-file-secret-0004', 'x-team': 'green' });
  });

  it('still refuses a masked header that stands for no value', async () => {
    const refused = await fileApi.put('/api/providers/lab-f', { type: 'openai', headers: { 'x-api-key': '****9999' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'masked_secret', param: 'providers.lab-f.headers.x-api-key' });
  });
});
