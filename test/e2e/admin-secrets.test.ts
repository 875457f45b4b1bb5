import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { AdminClient } from '../helpers/admin.js';
import { Store } from '../../src/store/store.js';
import { pino } from 'pino';

let upstream: ScriptedUpstream;
const dirs: string[] = [];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

const messages = [{ role: 'user' as const, content: 'hi' }];

/** Each secret minus its last four characters: what must never appear (masks show the last four). */
function exposedParts(secrets: string[]): string[] {
  return secrets.map((secret) => secret.slice(0, -4));
}

describe('provider key values never come back in full', () => {
  it('from any endpoint, including the writes themselves, /api/config and /api/audit', async () => {
    const secrets = {
      posted: 'sk-DISTINCTIVE-posted-secret-41c9e7aa',
      put: 'sk-DISTINCTIVE-put-secret-9d02b3bb',
      shorthand: 'sk-DISTINCTIVE-shorthand-secret-77f1cc',
      patched: 'sk-DISTINCTIVE-patched-secret-0be5dd',
      header: 'hdr-DISTINCTIVE-header-secret-5a6fee',
      viaConfig: 'sk-DISTINCTIVE-config-secret-c3d4ff',
    };
    const tg = await startGateway({}, {});
    try {
      const api = new AdminClient(tg.url);
      const base_url = `${upstream.url}/v1`;
      expect((await api.put('/api/providers/lab-a', { type: 'openai', base_url, keys: [{ value: secrets.put, models: ['only-put'] }] })).status).toBe(201);
      const posted = await api.post('/api/providers/lab-a/keys', { value: secrets.posted, models: ['only-posted'] });
      expect(posted.status).toBe(201);
      expect(posted.body.value).toBe(`****${secrets.posted.slice(-4)}`);
      expect((await api.patch(`/api/providers/lab-a/keys/${posted.body.id}`, { value: secrets.patched })).status).toBe(200);
      expect(
        (
          await api.put('/api/providers/lab-b', {
            type: 'openai',
            base_url,
            api_key: secrets.shorthand,
            headers: { authorization: `Bearer ${secrets.header}`, 'x-team': 'plain' },
          })
        ).status,
      ).toBe(201);
      expect(
        (await api.patch('/api/config', { providers: { 'lab-c': { type: 'openai', base_url, keys: [{ value: secrets.viaConfig }] } } }, { contentType: 'application/merge-patch+json' }))
          .status,
      ).toBe(200);
      expect((await api.put('/api/routes/r', { targets: [{ model: 'lab-a/only-posted' }] })).status).toBe(201);

      // The keys are real: the upstream receives them in full.
      await tg.client.chat.completions.create({ model: 'lab-a/only-put', messages });
      await tg.client.chat.completions.create({ model: 'r', messages });
      await tg.client.chat.completions.create({ model: 'lab-c/m', messages });
      expect(upstream.calls.map((call) => call.headers.authorization)).toEqual([`Bearer ${secrets.put}`, `Bearer ${secrets.patched}`, `Bearer ${secrets.viaConfig}`]);

      const reads = [
        '/api/config',
        '/api/config?layer=api',
        '/api/providers',
        '/api/providers/lab-a',
        '/api/providers/lab-b',
        '/api/providers/lab-c',
        '/api/providers/lab-a/keys',
        `/api/providers/lab-a/keys/${posted.body.id}`,
        '/api/routes',
        '/api/audit?limit=500',
      ];
      for (const path of reads) expect((await api.get(path)).status, path).toBe(200);
      // Replacing and deleting puts the old values into audit entries' "before".
      expect((await api.put('/api/providers/lab-a', { type: 'openai', base_url })).status).toBe(200);
      expect((await api.delete('/api/providers/lab-b')).status).toBe(204);
      expect((await api.get('/api/audit?limit=500')).body.data.length).toBeGreaterThanOrEqual(8);

      expect(api.seen.length).toBeGreaterThan(15);
      for (const response of api.seen) {
        for (const part of exposedParts(Object.values(secrets))) expect(response.text).not.toContain(part);
      }
      const layer = (await api.get('/api/config?layer=api')).body;
      expect(layer.providers['lab-c'].keys[0].value).toBe(`****${secrets.viaConfig.slice(-4)}`);
    } finally {
      await tg.stop();
    }
  });

  it('shows references (env:NAME) from the config file as written, since they name no secret; the API refuses them', async () => {
    const tg = await startGateway(
      { providers: { 'lab-a': { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ value: 'env:LAB_KEY' }] } } },
      { LAB_KEY: 'sk-DISTINCTIVE-from-env-abcdef12' },
    );
    try {
      const api = new AdminClient(tg.url);
      expect((await api.get('/api/providers/lab-a')).body.keys[0].value).toBe('env:LAB_KEY');
      await tg.client.chat.completions.create({ model: 'lab-a/m', messages });
      expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-DISTINCTIVE-from-env-abcdef12');
      for (const path of ['/api/config', '/api/audit']) expect((await api.get(path)).text).not.toContain('sk-DISTINCTIVE-from-env');
      // References read the gateway's environment and files: the operator's, not an API caller's.
      const viaApi = await api.post('/api/providers/lab-a/keys', { value: 'env:LAB_KEY' });
      expect(viaApi.status).toBe(400);
      expect(viaApi.body.error.param).toBe('providers.lab-a.keys.value');
    } finally {
      await tg.stop();
    }
  });
});

describe('masked values sent back unchanged', () => {
  // A client that reads the API layer (masked) and writes it back must not replace secrets with their masks.
  it('keep the real secrets when a client reads the API layer and writes it back (GET then PUT /api/config)', async () => {
    const tg = await startGateway({}, {});
    try {
      const api = new AdminClient(tg.url);
      await api.put('/api/providers/lab-a', {
        type: 'openai',
        base_url: `${upstream.url}/v1`,
        keys: [{ value: 'sk-DISTINCTIVE-roundtrip-key-1234' }],
        headers: { 'x-api-key': 'hdr-DISTINCTIVE-roundtrip-5678' },
      });
      const layer = (await api.get('/api/config?layer=api')).body;
      expect((await api.put('/api/config', layer)).status).toBe(200);
      await tg.client.chat.completions.create({ model: 'lab-a/m', messages });
      expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-DISTINCTIVE-roundtrip-key-1234');
      expect(upstream.calls[0]?.headers['x-api-key']).toBe('hdr-DISTINCTIVE-roundtrip-5678');
    } finally {
      await tg.stop();
    }
  });
});

describe("the /metrics token and a trace collector's headers set through the API", () => {
  const token = 'metrics-DISTINCTIVE-token-0009';
  const otlpAuth = 'Bearer otlp-DISTINCTIVE-secret-0010';

  async function withSettingsSecrets(run: (api: AdminClient, tg: Awaited<ReturnType<typeof startGateway>>) => Promise<void>): Promise<void> {
    const tg = await startGateway({}, {});
    try {
      const api = new AdminClient(tg.url);
      const patched = await api.patch('/api/config', { settings: { metrics: { bearer_token: token }, tracing: { endpoint: 'http://127.0.0.1:9/v1/traces', headers: { authorization: otlpAuth } } } });
      expect(patched.status).toBe(200);
      await run(api, tg);
      const settings = tg.gateway.configService.current().settings;
      expect(settings.metrics.bearerToken).toBe(token);
      expect(settings.tracing.headers).toEqual({ authorization: otlpAuth });
      expect((await fetch(`${tg.url}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await tg.stop();
    }
  }

  it('stay what they are when the API layer is read and written back (GET ?layer=api, then PUT)', async () => {
    await withSettingsSecrets(async (api) => {
      const layer = (await api.get('/api/config?layer=api')).body;
      expect(JSON.stringify(layer)).not.toContain('DISTINCTIVE');
      expect((await api.put('/api/config', layer)).status).toBe(200);
    });
  });

  it("stay what they are when the effective view is written back with another setting changed (the dashboard's settings page)", async () => {
    await withSettingsSecrets(async (api) => {
      const view = (await api.get('/api/config')).body;
      expect(JSON.stringify(view)).not.toContain('DISTINCTIVE');
      const written = await api.put('/api/config', { ...view, settings: { ...view.settings, log_retention_days: 7 } });
      expect(written.status).toBe(200);
      expect(written.body.settings.log_retention_days).toBe(7);
    });
  });
});

describe('a /metrics token from the config file or the environment', () => {
  it('stays theirs when the effective view is written back with another setting changed', async () => {
    for (const [file, env] of [[{ settings: { metrics: { bearer_token: 'file-metrics-token-0011' } } }, {}], [{}, { TOLLGATE_METRICS_TOKEN: 'env-metrics-token-0012' }]] as const) {
      const tg = await startGateway(file, env);
      try {
        const api = new AdminClient(tg.url);
        const before = tg.gateway.configService.current().settings.metrics.bearerToken;
        const view = (await api.get('/api/config')).body;
        expect((await api.put('/api/config', { ...view, settings: { ...view.settings, log_retention_days: 7 } })).status).toBe(200);
        expect(tg.gateway.configService.current().settings.metrics.bearerToken).toBe(before);
        expect((await api.get('/api/config?layer=api')).body.settings).toEqual({ log_retention_days: 7 });
      } finally {
        await tg.stop();
      }
    }
  });
});

describe('credentials inside URLs', () => {
  it("a trace collector's, an MCP server's and a base URL's user, password and token never come back, and a round trip keeps them", async () => {
    const tg = await startGateway({}, {});
    try {
      const api = new AdminClient(tg.url);
      const secrets = ['DISTINCTIVEuserpw1', 'DISTINCTIVEqtoken2', 'DISTINCTIVEmcppw3', 'DISTINCTIVEmcpq4', 'DISTINCTIVEbaseq5'];
      const endpoint = `http://u:${secrets[0]}@127.0.0.1:9/v1/traces?token=${secrets[1]}`;
      const mcpUrl = `http://u:${secrets[2]}@127.0.0.1:9/mcp?key=${secrets[3]}`;
      const baseUrl = `${upstream.url}/v1?api_key=${secrets[4]}&api-version=2024-06-01`;
      const patched = await api.patch('/api/config', {
        settings: { tracing: { endpoint } },
        mcp: { servers: { m1: { type: 'http', url: mcpUrl } } },
        providers: { lab: { type: 'openai', base_url: baseUrl, api_key: 'sk-lab-1234567890' } },
      });
      expect(patched.status).toBe(200);
      const answers = [
        JSON.stringify(patched.body),
        JSON.stringify((await api.get('/api/config')).body),
        JSON.stringify((await api.get('/api/config?layer=api')).body),
        JSON.stringify((await api.get('/api/audit')).body),
        await (await fetch(`${tg.url}/api/audit/export?format=jsonl`)).text(),
        await (await fetch(`${tg.url}/api/audit/export?format=csv`)).text(),
        JSON.stringify((await api.get('/api/mcp')).body),
        JSON.stringify((await api.get('/api/providers')).body),
      ];
      for (const answer of answers) for (const secret of secrets) expect(answer).not.toContain(secret);
      // What is not a credential stays readable.
      expect(JSON.stringify((await api.get('/api/config?layer=api')).body)).toContain('api-version=2024-06-01');
      // Read and written back as read: the stored values stay.
      const layer = (await api.get('/api/config?layer=api')).body;
      expect((await api.put('/api/config', layer)).status).toBe(200);
      const stored = tg.gateway.configService.current();
      expect(stored.settings.tracing.endpoint).toBe(endpoint);
      // Kept apart as resolved: the query goes after each operation's path (test/e2e/base-url-query.test.ts).
      expect(`${stored.providers.get('lab')?.baseUrl}?${stored.providers.get('lab')?.baseQuery}`).toBe(baseUrl);
      const server = stored.mcp.servers.get('m1');
      expect(server?.type === 'http' ? server.url : null).toBe(mcpUrl);
    } finally {
      await tg.stop();
    }
  });
});

describe('the API layer survives a restart', () => {
  it('keeps providers, keys, routes, settings and the audit log', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-admin-restart-'));
    dirs.push(dataDir);
    const secret = 'sk-DISTINCTIVE-restart-secret-9f8e';
    const first = await startGateway({}, {}, { dataDir });
    let versionBefore: number;
    try {
      const api = new AdminClient(first.url);
      await api.put('/api/providers/lab-a', { type: 'openai', base_url: `${upstream.url}/v1` });
      const key = await api.post('/api/providers/lab-a/keys', { value: secret });
      expect(key.status).toBe(201);
      await api.put('/api/routes/team%2Fchat', { targets: [{ model: 'lab-a/persisted', weight: 2 }] });
      await api.patch('/api/config', { settings: { max_body_bytes: 123_456 } });
      versionBefore = (await api.get('/api/config')).body.version;
    } finally {
      await first.stop();
    }

    const second = await startGateway({}, {}, { dataDir });
    try {
      const api = new AdminClient(second.url);
      const config = await api.get('/api/config');
      expect(config.body.version).toBeGreaterThanOrEqual(versionBefore);
      expect(config.body.settings.max_body_bytes).toBe(123_456);
      expect((await api.get('/api/routes/team%2Fchat')).body).toMatchObject({ name: 'team/chat', targets: [{ model: 'lab-a/persisted', weight: 2 }], source: 'api' });
      const provider = await api.get('/api/providers/lab-a');
      expect(provider.body).toMatchObject({ source: 'api', keys: [{ value: '****9f8e', source: 'api' }] });

      await second.client.chat.completions.create({ model: 'team/chat', messages });
      expect(upstream.calls[0]?.body.model).toBe('persisted');
      expect(upstream.calls[0]?.headers.authorization).toBe(`Bearer ${secret}`);

      const audit = await api.get('/api/audit');
      expect(audit.body.data.map((e: any) => e.action)).toEqual(['config.patched', 'route.created', 'provider_key.created', 'provider.created']);

      // The key id survives too, so the key can still be addressed.
      const keyId = provider.body.keys[0].id;
      expect((await api.patch(`/api/providers/lab-a/keys/${keyId}`, { weight: 4 })).body.weight).toBe(4);
      const after = await api.get('/api/config');
      expect(after.body.version).toBeGreaterThan(config.body.version);
      for (const response of api.seen) expect(response.text).not.toContain(secret.slice(0, -4));
    } finally {
      await second.stop();
    }
  });
});

describe('secrets as long as the schema allows survive a restart', () => {
  it('keeps a 1000-character webhook secret and a 10,000-character MCP token, and the rest of the API layer with them', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-admin-long-secrets-'));
    dirs.push(dataDir);
    const first = await startGateway({}, {}, { dataDir });
    try {
      const api = new AdminClient(first.url);
      expect((await api.put('/api/routes/kept', { targets: [{ model: 'openai/gpt-4o-mini' }] })).status).toBe(201);
      // The longest values the schema takes: their sealed form is longer still.
      expect((await api.put('/api/alerts/channels/hook', { type: 'webhook', url: 'https://example.com/hook', secret: `${'s'.repeat(996)}tail` })).status).toBe(201);
      const mcp = await api.patch('/api/config', { mcp: { servers: { remote: { type: 'http', url: 'https://example.com/mcp', token: `${'t'.repeat(9_996)}tok1`, disabled: true } } } });
      expect(mcp.status).toBe(200);
    } finally {
      await first.stop();
    }

    const second = await startGateway({}, {}, { dataDir });
    try {
      const api = new AdminClient(second.url);
      expect((await api.get('/api/routes/kept')).body).toMatchObject({ name: 'kept', source: 'api' });
      expect((await api.get('/api/alerts/channels/hook')).body).toMatchObject({ type: 'webhook', secret: '****tail' });
      expect((await api.get('/api/config?layer=api')).body.mcp.servers.remote).toMatchObject({ type: 'http', token: '****tok1' });
    } finally {
      await second.stop();
    }
  });
});

describe('a stored API layer the configuration no longer accepts whole', () => {
  it('starts with every part it accepts, leaves out only the refused ones, and keeps the layer as stored aside', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-admin-salvage-'));
    dirs.push(dataDir);
    const secret = 'sk-DISTINCTIVE-salvage-secret-5d4c';
    const first = await startGateway({}, {}, { dataDir });
    try {
      const api = new AdminClient(first.url);
      await api.put('/api/providers/lab-a', { type: 'openai', base_url: `${upstream.url}/v1` });
      expect((await api.post('/api/providers/lab-a/keys', { value: secret })).status).toBe(201);
      await api.put('/api/routes/kept', { targets: [{ model: 'lab-a/persisted' }] });
    } finally {
      await first.stop();
    }

    // What an upgrade with a stricter check (or a hand edit) meets: one route it refuses, one setting it does not know.
    const store = await Store.open(dataDir, 'test');
    const stored = store.config.load();
    const document = stored?.document as { routes: Record<string, unknown>; settings?: Record<string, unknown> };
    document.routes.refused = { targets: 'not a list' };
    document.settings = { ...document.settings, setting_from_the_future: true };
    await store.config.save(document, stored?.version ?? 0);
    await store.close();

    const second = await startGateway({}, {}, { dataDir });
    try {
      const api = new AdminClient(second.url);
      // The rest is in force: the provider with its key, the route that passed.
      await second.client.chat.completions.create({ model: 'kept', messages });
      expect(upstream.calls.at(-1)?.headers.authorization).toBe(`Bearer ${secret}`);
      expect((await api.get('/api/routes/refused')).status).toBe(404);
      // A change through the API saves the layer again; what was stored before is still kept aside.
      expect((await api.put('/api/routes/after', { targets: [{ model: 'lab-a/later' }] })).status).toBe(201);
    } finally {
      await second.stop();
    }
    const reopened = await Store.open(dataDir, 'test');
    try {
      const aside = reopened.config.setAsideLayers();
      expect(aside).toHaveLength(1);
      expect(aside[0]?.layer.document).toMatchObject({ routes: { refused: { targets: 'not a list' }, kept: {} }, settings: { setting_from_the_future: true } });
      // Kept as it was stored: its secrets sealed.
      expect(JSON.stringify(aside[0]?.layer.document)).not.toContain(secret);
    } finally {
      await reopened.close();
    }
  });
});

describe('a stored API layer that no longer fits the config file it starts with', () => {
  it('starts without the parts that name what the file dropped (each named with why), the rest in force, the layer kept aside', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-admin-refit-'));
    dirs.push(dataDir);
    const withLab = { providers: { lab: { type: 'openai', base_url: `${upstream.url}/v1` }, other: { type: 'openai', base_url: `${upstream.url}/v1` } } };
    const first = await startGateway(withLab, {}, { dataDir });
    try {
      const api = new AdminClient(first.url);
      // Set through the API on the file's providers: a route and a routing rule on `lab`, a route on `other`.
      expect((await api.put('/api/routes/on-lab', { targets: [{ model: 'lab/m' }] })).status).toBe(201);
      expect((await api.put('/api/routes/on.other', { targets: [{ model: 'other/m' }] })).status).toBe(201);
      expect((await api.patch('/api/config', { routing_rules: [{ when: { metadata: { tier: 'free' } }, route_to: 'lab/cheap' }] })).status).toBe(200);
    } finally {
      await first.stop();
    }

    // The operator takes `lab` out of the config file and restarts.
    const logged: Array<{ dropped?: string[] }> = [];
    const log = pino({ level: 'error' }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const second = await startGateway({ providers: { other: withLab.providers.other } }, {}, { dataDir, log });
    try {
      const api = new AdminClient(second.url);
      expect((await api.get('/api/routes/on-lab')).status).toBe(404);
      expect((await api.get('/api/config')).body.routing_rules).toEqual([]);
      const answer = await second.client.chat.completions.create({ model: 'on.other', messages });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
      const dropped = logged.flatMap((entry) => entry.dropped ?? []);
      expect(dropped).toEqual([expect.stringMatching(/^routes\.on-lab: .*unknown provider "lab"/), expect.stringMatching(/^routing_rules: .*lab\/cheap/)]);
    } finally {
      await second.stop();
    }
    const reopened = await Store.open(dataDir, 'test');
    try {
      const aside = reopened.config.setAsideLayers();
      expect(aside).toHaveLength(1);
      expect(aside[0]?.layer.document).toMatchObject({ routes: { 'on-lab': {}, 'on.other': {} }, routing_rules: [{ route_to: 'lab/cheap' }] });
    } finally {
      await reopened.close();
    }
  });
});
