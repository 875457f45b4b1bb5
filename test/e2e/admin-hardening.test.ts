import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { AdminClient } from '../helpers/admin.js';
import { parseConfigDocument } from '../../src/config/load-file.js';

const ADMIN_KEY = 'admin-key-DISTINCTIVE-7f3a9c1e55';
const messages = [{ role: 'user' as const, content: 'hi' }];

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let api: AdminClient;
let dataDir: string;
let secretKey: string;
const dirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dataDir = tempDir('tollgate-hardening-');
  tg = await startGateway({}, { TOLLGATE_ADMIN_KEY: ADMIN_KEY }, { dataDir });
  api = new AdminClient(tg.url, ADMIN_KEY);
  secretKey = readFileSync(join(dataDir, 'secret.key'), 'utf8').trim();
  expect(secretKey.length).toBeGreaterThan(20);
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

/** Everything the scripted upstream was sent in headers, as one string to search for secrets. */
function upstreamHeaders(): string {
  return JSON.stringify(upstream.calls.map((call) => call.headers));
}

function expectNoSecretUpstream(): void {
  const seen = upstreamHeaders();
  expect(seen).not.toContain(secretKey);
  expect(seen).not.toContain(ADMIN_KEY);
}

describe('the API cannot make the gateway read its own files or environment', () => {
  it('refuses env: and file: references in a provider, naming the field, and nothing reaches the attacker', async () => {
    const base_url = `${upstream.url}/v1`;
    const attempts: Array<[unknown, string]> = [
      [{ type: 'openai', base_url, api_key: `file:${join(dataDir, 'secret.key')}` }, 'providers.thief.api_key'],
      [{ type: 'openai', base_url, api_key: 'env:TOLLGATE_ADMIN_KEY' }, 'providers.thief.api_key'],
      [{ type: 'openai', base_url, keys: [{ value: 'sk-harmless-literal-0001' }, { value: 'file:/etc/hostname' }] }, 'providers.thief.keys.1.value'],
    ];
    for (const [body, param] of attempts) {
      const response = await api.put('/api/providers/thief', body);
      expect(response.status).toBe(400);
      expect(response.body.error.param).toBe(param);
      expect(response.body.error.message).toMatch(/references are accepted only in the config file/);
    }
    expect((await api.get('/api/providers/thief')).status).toBe(404);
    await expect(tg.client.chat.completions.create({ model: 'thief/m', messages })).rejects.toMatchObject({ status: 404 });
    expect(upstream.calls).toHaveLength(0);
  });

  it('refuses references through every other write: whole config, merge patch, key creation and key update', async () => {
    const base_url = `${upstream.url}/v1`;
    const put = await api.put('/api/config', { providers: { thief: { type: 'openai', base_url, api_key: 'env:TOLLGATE_ADMIN_KEY' } } });
    expect(put.status).toBe(400);
    expect(put.body.error.param).toBe('providers.thief.api_key');
    const patch = await api.patch('/api/config', { providers: { thief: { type: 'openai', base_url, keys: [{ value: `file:${dataDir}/secret.key` }] } } });
    expect(patch.status).toBe(400);
    expect(patch.body.error.param).toBe('providers.thief.keys.0.value');

    // A provider with an honest key, then attempts to swap the key for a reference.
    expect((await api.put('/api/providers/thief2', { type: 'openai', base_url, keys: [{ id: 'k1', value: 'sk-honest-literal-key-0002' }] })).status).toBe(201);
    const added = await api.post('/api/providers/thief2/keys', { value: 'env:TOLLGATE_ADMIN_KEY' });
    expect(added.status).toBe(400);
    expect(added.body.error.param).toBe('providers.thief2.keys.value');
    const patched = await api.patch('/api/providers/thief2/keys/k1', { value: `file:${join(dataDir, 'secret.key')}` });
    expect(patched.status).toBe(400);
    expect(patched.body.error.param).toBe('providers.thief2.keys.k1.value');

    await tg.client.chat.completions.create({ model: 'thief2/m', messages });
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-honest-literal-key-0002');
    expectNoSecretUpstream();
    await api.delete('/api/providers/thief2');
  });

  it('refuses a vertex key that is a path (the adapter would read the file), so secret.key cannot be sent as a token', async () => {
    const response = await api.put('/api/providers/vx', { type: 'vertex', base_url: `${upstream.url}`, api_key: join(dataDir, 'secret.key') });
    expect(response.status).toBe(400);
    expect(response.body.error.param).toBe('providers.vx.api_key');
    expect((await api.get('/api/providers/vx')).status).toBe(404);
  });

  it('never reads the data directory\'s secret.key as a key, even from the config file and through a symlink', async () => {
    const linkDir = tempDir('tollgate-link-');
    const link = join(linkDir, 'innocent.txt');
    symlinkSync(join(dataDir, 'secret.key'), link);
    // A second gateway on the same data directory would fight over LMDB; use a copy holding its own secret.key.
    const otherDir = tempDir('tollgate-hardening-file-');
    writeFileSync(join(otherDir, 'secret.key'), secretKey, { mode: 0o600 });
    const otherLink = join(linkDir, 'other.txt');
    symlinkSync(join(otherDir, 'secret.key'), otherLink);
    for (const reference of [`file:${join(otherDir, 'secret.key')}`, `file:${otherLink}`]) {
      await expect(
        startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: reference } } }, {}, { dataDir: otherDir }),
      ).rejects.toThrow(/secret\.key, which is never used as a provider key/);
    }
    // An ordinary file reference from the file still works.
    const keyFile = join(linkDir, 'key.txt');
    writeFileSync(keyFile, 'sk-from-a-mounted-file-0003\n');
    const ok = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: `file:${keyFile}` } } }, {}, { dataDir: otherDir });
    try {
      await ok.client.chat.completions.create({ model: 'openai/m', messages });
      expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-from-a-mounted-file-0003');
    } finally {
      await ok.stop();
    }
    expectNoSecretUpstream();
  });
});

describe('validated at the door', () => {
  it('token_url takes https, and http only for a loopback host', async () => {
    for (const token_url of ['ftp://example.com/token', 'file:///etc/passwd', 'http://example.com/token', 'http://10.0.0.1/token']) {
      const response = await api.put('/api/providers/vx2', { type: 'vertex', token_url });
      expect(response.status, token_url).toBe(400);
      expect(response.body.error.param).toBe('providers.vx2.token_url');
    }
    for (const token_url of ['https://oauth2.googleapis.com/token', 'http://127.0.0.1:9/token', 'http://localhost:9/token', 'http://[::1]:9/token']) {
      const response = await api.put('/api/providers/vx2', { type: 'vertex', token_url });
      expect(response.status, token_url).toBeLessThan(300);
    }
    await api.delete('/api/providers/vx2');
  });

  it('a base URL\'s user:password is masked in every answer and the audit log, and kept when written back', async () => {
    const base_url = `http://alice:hunter2-DISTINCTIVE@127.0.0.1:${new URL(upstream.url).port}/v1`;
    const before = api.seen.length;
    const created = await api.put('/api/providers/creds', { type: 'openai', base_url, keys: [{ value: 'sk-creds-provider-key-0004' }] });
    expect(created.status).toBe(201);
    expect(created.body.base_url).toBe(`http://****@127.0.0.1:${new URL(upstream.url).port}/v1`);
    const read = await api.get('/api/providers/creds');
    expect((await api.put('/api/providers/creds', read.body)).status).toBe(200);
    await api.get('/api/config');
    await api.get('/api/config?layer=api');
    await api.get('/api/audit?limit=10');
    await api.get('/api/providers');
    for (const response of api.seen.slice(before)) {
      expect(response.text).not.toContain('hunter2');
      expect(response.text).not.toContain('alice');
    }
    // Written back masked, the real URL (with its credentials) is what is used.
    expect(tg.gateway.configService.current().providers.get('creds')?.baseUrl).toBe(base_url);
    // A masked userinfo that stands for nothing stored is refused.
    const forged = await api.put('/api/providers/creds2', { type: 'openai', base_url: 'http://****@127.0.0.1:9/v1' });
    expect(forged.status).toBe(400);
    expect(forged.body.error.param).toBe('providers.creds2.base_url');
    await api.delete('/api/providers/creds');
  });

  it('refuses header names, header values and keys that cannot be sent in HTTP, naming the field', async () => {
    const base_url = `${upstream.url}/v1`;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ headers: { 'x-team': 'blue\r\nX-Injected: 1' } }, 'providers.bad.headers.x-team'],
      [{ headers: { 'x-team': 'nul\u0000' } }, 'providers.bad.headers.x-team'],
      [{ headers: { 'x-team': 'euro-€' } }, 'providers.bad.headers.x-team'],
      [{ headers: { 'bad name': 'v' } }, 'providers.bad.headers.bad name'],
      [{ headers: { 'x-inj\r\nx': 'v' } }, 'providers.bad.headers.x-inj\r\nx'],
      [{ api_key: 'sk-with-newline\r\nX-Injected: 1' }, 'providers.bad.api_key'],
      [{ keys: [{ value: 'sk-nul-\u0000-key' }] }, 'providers.bad.keys.0.value'],
      [{ keys: [{ value: 'sk-surrogate-\ud800' }] }, 'providers.bad.keys.0.value'],
    ];
    for (const [extra, param] of cases) {
      const response = await api.put('/api/providers/bad', { type: 'openai', base_url, ...extra });
      expect(response.status, JSON.stringify(extra)).toBe(400);
      expect(response.body.error.param).toBe(param);
    }
    expect((await api.get('/api/providers/bad')).status).toBe(404);
    // The file is held to the same schema.
    expect(() => parseConfigDocument({ providers: { bad: { type: 'openai', headers: { 'x-a': 'v\nX: 1' } } } }, 'file')).toThrow(/providers\.bad\.headers\.x-a/);
    expect(() => parseConfigDocument({ providers: { bad: { type: 'openai', api_key: 'sk\r\n' } } }, 'file')).toThrow(/providers\.bad\.api_key/);
  });

  it("refuses names every JavaScript object has (constructor, toString, prototype) with a 400, through every write", async () => {
    const base_url = `${upstream.url}/v1`;
    const put = await api.put('/api/providers/constructor', { type: 'openai', base_url });
    expect(put.status).toBe(400);
    expect(put.body.error.message).toMatch(/reserved/);
    const version = (await api.get('/api/config')).body.version;
    const patched = await api.patch('/api/config', { providers: { constructor: { type: 'openai', base_url, api_key: 'sk-ctor-key-123' } } });
    expect(patched.status).toBe(400);
    expect(JSON.stringify(patched.body)).toMatch(/constructor/);
    expect((await api.get('/api/config')).body.version).toBe(version);
    expect((await api.patch('/api/config', { routes: { toString: { targets: [{ model: 'openai/gpt-4o-mini' }] } } })).status).toBe(400);
    expect((await api.patch('/api/config', { routes: { prototype: { targets: [{ model: 'openai/gpt-4o-mini' }] } } })).status).toBe(400);
    // Names that merely look alike are fine.
    expect((await api.put('/api/providers/tostring', { type: 'openai', base_url })).status).toBeLessThan(300);
    expect((await api.delete('/api/providers/tostring')).status).toBe(204);
  });

  it('bounds weights and durations so no sum overflows and no timer misfires', async () => {
    const huge = await api.put('/api/routes/overflow', { targets: [{ model: 'openai/a', weight: 1e308 }, { model: 'openai/b', weight: 1e308 }] });
    expect(huge.status).toBe(400);
    expect(huge.body.error.param).toBe('routes.overflow.targets.0.weight');
    const bigKey = await api.put('/api/providers/w', { type: 'openai', keys: [{ value: 'sk-weighted-key-000005', weight: 1e308 }] });
    expect(bigKey.status).toBe(400);
    expect(bigKey.body.error.param).toBe('providers.w.keys.0.weight');
    for (const [body, param] of [
      [{ settings: { upstream_timeouts: { total_ms: 2 ** 31 } } }, 'settings.upstream_timeouts.total_ms'],
      [{ settings: { shutdown_grace_ms: 1e300 } }, 'settings.shutdown_grace_ms'],
      [{ settings: { routing: { retry: { deadline_ms: 2 ** 40 } } } }, 'settings.routing.retry.deadline_ms'],
      [{ settings: { routing: { breaker: { cooldown_ms: 2 ** 35 } } } }, 'settings.routing.breaker.cooldown_ms'],
      [{ providers: { w: { type: 'openai', timeouts: { idle_ms: 9e15 } } } }, 'providers.w.timeouts.idle_ms'],
      [{ providers: { w: { type: 'openai', prices: { '*': { input_per_mtok: 1e308, output_per_mtok: 1 } } } } }, 'providers.w.prices.*.input_per_mtok'],
    ] as const) {
      const response = await api.patch('/api/config', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.param).toBe(param);
    }
    // The largest allowed weights still serve.
    const ok = await api.put('/api/routes/heavy', { targets: [{ model: 'openai/a', weight: 1e6 }, { model: 'openai/b', weight: 1e6 }] });
    expect(ok.status).toBe(201);
    expect((await api.put('/api/providers/openai', { base_url: `${upstream.url}/v1`, keys: [{ value: 'sk-openai-test-key-0006' }] })).status).toBeLessThan(300);
    const answer = await tg.client.chat.completions.create({ model: 'heavy', messages });
    expect(answer.choices[0]?.message).toBeDefined();
    await api.delete('/api/routes/heavy');
    await api.delete('/api/providers/openai');
  });
});

describe('GET /api/config -> PUT /api/config round-trips', () => {
  it('accepts the effective view back unchanged and changes nothing: providers with keys, routes, settings, rules', async () => {
    const rt = await startGateway(
      {
        settings: { max_body_bytes: 123_456 },
        providers: {
          filed: { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ value: 'env:FILED_KEY' }], headers: { 'x-api-key': 'file-header-secret-0007' } },
        },
        routes: { 'file-route': { targets: [{ model: 'filed/m', weight: 2 }], fallbacks: ['openai/gpt-4o-mini'] } },
      },
      { FILED_KEY: 'sk-filed-from-env-key-0008', OPENAI_API_KEY: 'sk-openai-env-key-0009' },
    );
    try {
      const admin = new AdminClient(rt.url);
      const port = new URL(upstream.url).port;
      expect(
        (
          await admin.put('/api/config', {
            settings: { upstream_timeouts: { total_ms: 90_000 }, routing: { retry: { max_attempts: 4 } } },
            providers: {
              lab: {
                type: 'openai',
                base_url: `http://bob:pw-DISTINCTIVE@127.0.0.1:${port}/v1`,
                keys: [{ value: 'sk-lab-api-key-secret-0010', weight: 2 }, { value: 'short' }],
                headers: { authorization: 'Bearer hdr-lab-secret-0011', 'x-team': 'red' },
                prices: { '*': { input_per_mtok: 1, output_per_mtok: 2 } },
              },
              filed: { keys: [{ value: 'sk-filed-api-extra-0012' }], timeouts: { first_byte_ms: 5_000 } },
              groq: {},
            },
            routes: {
              chat: { targets: [{ model: 'lab/m', weight: 3 }, { model: 'filed/m' }], fallbacks: ['file-route'], price: { input_per_mtok: 1, output_per_mtok: 1 } },
              'file-route': { targets: [{ model: 'lab/other' }], retry: { max_attempts: 2 } },
            },
            routing_rules: [{ name: 'big', when: { estimated_tokens_gte: 1000 }, route_to: 'chat' }],
          })
        ).status,
      ).toBe(200);
      const layerBefore = (await admin.get('/api/config?layer=api')).body;
      const read = await admin.get('/api/config');
      const auditBefore = (await admin.get('/api/audit?limit=500')).body.data?.length ?? (await admin.get('/api/audit?limit=500')).body.length;

      const written = await admin.put('/api/config', read.body);
      expect(written.status, written.text).toBe(200);
      const { version: _v, ...after } = written.body;
      const { version: _v2, ...before } = read.body;
      expect(after).toEqual(before);
      expect(written.body.version).toBe(read.body.version);
      expect((await admin.get('/api/config?layer=api')).body).toEqual(layerBefore);
      const auditAfter = (await admin.get('/api/audit?limit=500')).body.data?.length ?? (await admin.get('/api/audit?limit=500')).body.length;
      expect(auditAfter).toBe(auditBefore);

      // The real secrets are still what is sent upstream.
      await rt.client.chat.completions.create({ model: 'filed/m', messages });
      const sent = upstream.calls.at(-1)?.headers;
      expect(['Bearer sk-filed-from-env-key-0008', 'Bearer sk-filed-api-extra-0012']).toContain(sent?.authorization);
      expect(sent?.['x-api-key']).toBe('file-header-secret-0007');

      // An edit of the read view is applied, and only the edit.
      const edited = structuredClone(read.body);
      edited.routes.find((route: { name: string }) => route.name === 'chat').targets[0].weight = 5;
      edited.settings.max_body_bytes = 654_321;
      const applied = await admin.put('/api/config', edited);
      expect(applied.status, applied.text).toBe(200);
      expect(applied.body.version).toBe(read.body.version + 1);
      const layer = (await admin.get('/api/config?layer=api')).body;
      expect(layer.routes.chat.targets[0].weight).toBe(5);
      expect(layer.settings).toEqual({ ...layerBefore.settings, max_body_bytes: 654_321 });
      expect(layer.providers).toEqual(layerBefore.providers);
      expect(rt.gateway.configService.current().providers.get('lab')?.baseUrl).toBe(`http://bob:pw-DISTINCTIVE@127.0.0.1:${port}/v1`);
      for (const response of admin.seen) expect(response.text).not.toContain('pw-DISTINCTIVE');
    } finally {
      await rt.stop();
    }
  });
});

describe('concurrent writes', () => {
  it('provider keys added at once with the same id: one is stored, the others are a 409', async () => {
    expect((await api.put('/api/providers/race-lab', { type: 'openai', base_url: `${upstream.url}/v1` })).status).toBe(201);
    const answers = await Promise.all(['aaaa1111', 'bbbb2222', 'cccc3333', 'dddd4444'].map((tail) => api.post('/api/providers/race-lab/keys', { id: 'same-id', value: `sk-race-${tail}` })));
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409, 409, 409]);
    const created = answers.find((answer) => answer.status === 201);
    const keys = (await api.get('/api/providers/race-lab/keys')).body.data;
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatchObject({ id: 'same-id', value: created?.body.value });
  });
});
