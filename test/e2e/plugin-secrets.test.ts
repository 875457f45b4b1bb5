import { mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load-file.js';
import { AdminClient, type AdminResponse } from '../helpers/admin.js';
import { openAIConfig, startGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Secrets in plugin options: `env:`/`file:` references read for the plugin and shown as written, and the options a
 * plugin declares secret (`secretOptions`) masked wherever the config is shown, sealed where it is stored, and kept
 * when written back masked. Through a real plugin loaded by a running gateway and the management API.
 */

const ENV_KEY = 'mod-key-from-env-DISTINCTIVE-7e41';
const FILE_KEY_1 = 'mod-key-from-file-DISTINCTIVE-0001';
const FILE_KEY_2 = 'mod-key-from-file-DISTINCTIVE-0002';
const TOKEN = 'webhook-token-literal-DISTINCTIVE-9c2a';
const API_KEY = 'mod-key-set-through-api-DISTINCTIVE-5b3f';
const SECRETS = [ENV_KEY, FILE_KEY_1, FILE_KEY_2, TOKEN, API_KEY];

/**
 * A moderation-style plugin with an API key and a webhook token, declared secret. Its schema checks the key's form,
 * so a reference reaching it unread would be refused. It tells the client the last 4 characters of the key it has.
 */
const MODERATION = `
import { z } from ${JSON.stringify(import.meta.resolve('zod'))};
const probe = () => (globalThis.__pluginSecretsProbe ??= { created: [] });
export default {
  name: 'moderation',
  secretOptions: ['api_key', 'auth.token'],
  options: z.strictObject({
    api_key: z.string().startsWith('mod-key-'),
    auth: z.strictObject({ token: z.string() }).optional(),
    mask: z.string().default('****'),
    note: z.string().optional(),
  }),
  create(options) {
    probe().created.push(options);
    return { name: 'moderation', run(ctx, next) { ctx.responseHeaders['x-moderation-key-tail'] = options.api_key.slice(-4); return next(); } };
  },
};
`;

const probe = globalThis as unknown as { __pluginSecretsProbe: { created: Array<{ api_key: string; auth?: { token: string }; mask: string; note?: string }> } };
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

let upstream: ScriptedUpstream;
let dir: string;
let pluginPath: string;

function lastCreated() {
  return probe.__pluginSecretsProbe.created.at(-1);
}

async function keyTail(client: OpenAI): Promise<string | null> {
  const { response } = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
  return response.headers.get('x-moderation-key-tail');
}

function expectNoSecret(api: AdminClient): void {
  for (const seen of api.seen) for (const secret of SECRETS) expect(seen.text).not.toContain(secret);
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 20));
  }
}

/** Every file of the data directory's LMDB store, as text: what a copied data directory gives away. */
function storeText(dataDir: string): string {
  const files = readdirSync(dataDir).filter((name) => name.startsWith('tollgate.lmdb'));
  return files.map((name) => readFileSync(join(dataDir, name)).toString('latin1')).join('\n');
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-secrets-'));
  pluginPath = join(dir, 'moderation.mjs');
  writeFileSync(pluginPath, MODERATION);
});
afterAll(async () => {
  await upstream.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  upstream.reset();
  probe.__pluginSecretsProbe = { created: [] };
});

describe('secrets in plugin options', () => {
  it('reads env: references for the plugin and shows the reference; masks a declared literal secret in every answer and the audit log', async () => {
    const tg = await startGateway(
      openAIConfig(upstream.url, { plugins: [{ name: 'moderation', path: pluginPath, options: { api_key: 'env:MOD_KEY', auth: { token: TOKEN }, note: 'first' } }] }),
      { MOD_KEY: ENV_KEY },
    );
    const api = new AdminClient(tg.url);
    try {
      expect(lastCreated()).toMatchObject({ api_key: ENV_KEY, auth: { token: TOKEN }, mask: '****' });
      expect(await keyTail(tg.client)).toBe(ENV_KEY.slice(-4));

      const view = await api.get('/api/config');
      expect(view.status).toBe(200);
      expect(view.body.plugins[0].options).toEqual({ api_key: 'env:MOD_KEY', auth: { token: `****${TOKEN.slice(-4)}` }, note: 'first' });

      // The dashboard's save of something else: the file's plugin list read back unchanged stays the file's.
      const saved = await api.put('/api/config', { ...view.body, settings: { ...view.body.settings, log_retention_days: 9 } });
      expect(saved.status).toBe(200);
      expect((await api.get('/api/config?layer=api')).body.plugins).toBeUndefined();
      expect(lastCreated()).toMatchObject({ api_key: ENV_KEY, auth: { token: TOKEN } });

      // A change to the plugin through the API would make the whole list the API's, which cannot hold the file's reference.
      const changed = structuredClone(view.body);
      changed.plugins[0].options.note = 'second';
      const refused = await api.put('/api/config', changed);
      expect(refused.status).toBe(409);
      expect(refused.body.error.param).toBe('plugins.0.options.api_key');
      expect(refused.body.error.message).toContain('env:/file: reference in the config file');

      await api.get('/api/audit?limit=100');
      expectNoSecret(api);
    } finally {
      await tg.stop();
    }
  });

  it('keeps a literal secret set through the API: masked when read, restored when written back masked, sealed in the store', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-secrets-data-'));
    const tg = await startGateway(openAIConfig(upstream.url), {}, { dataDir });
    const api = new AdminClient(tg.url);
    try {
      const entry = { name: 'moderation', path: pluginPath, options: { api_key: API_KEY, auth: { token: TOKEN }, mask: '****', note: 'first' } };
      const patched = await api.patch('/api/config', { plugins: [entry] });
      expect(patched.status).toBe(200);
      expect(lastCreated()).toMatchObject({ api_key: API_KEY, auth: { token: TOKEN } });
      // Masked in the answer to the write itself; a non-secret option that looks masked is shown as it is.
      expect(patched.body.plugins[0].options).toEqual({ api_key: `****${API_KEY.slice(-4)}`, auth: { token: `****${TOKEN.slice(-4)}` }, mask: '****', note: 'first' });
      expect((await api.get('/api/config?layer=api')).body.plugins[0].options.api_key).toBe(`****${API_KEY.slice(-4)}`);

      // Read, change one option, write back: the masked secrets stand for the stored ones.
      const view = (await api.get('/api/config')).body;
      view.plugins[0].options.note = 'second';
      const put = await api.put('/api/config', view);
      expect(put.status).toBe(200);
      expect(lastCreated()).toMatchObject({ api_key: API_KEY, auth: { token: TOKEN }, mask: '****', note: 'second' });
      expect(await keyTail(tg.client)).toBe(API_KEY.slice(-4));
      // The API layer read and written back whole (PUT of the layer, PATCH of the list) keeps them too.
      const layer = (await api.get('/api/config?layer=api')).body;
      expect((await api.put('/api/config', { ...layer, plugins: [{ ...layer.plugins[0], options: { ...layer.plugins[0].options, note: 'third' } }] })).status).toBe(200);
      expect(lastCreated()).toMatchObject({ api_key: API_KEY, auth: { token: TOKEN }, note: 'third' });

      // A masked value that stands for nothing stored, and a reference, are refused naming the option.
      const unknown = await api.patch('/api/config', { plugins: [{ ...entry, options: { ...entry.options, api_key: '****zzzz' } }] });
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.param).toBe('plugins.0.options.api_key');
      const reference = await api.patch('/api/config', { plugins: [{ ...entry, options: { ...entry.options, api_key: 'env:HOME' } }] });
      expect(reference.status).toBe(400);
      expect(reference.body.error.param).toBe('plugins.0.options.api_key');
      expect(reference.body.error.message).toContain('references are accepted only in the config file');
      expect(lastCreated()?.note).toBe('third');

      await api.get('/api/audit?limit=100');
      expectNoSecret(api);
    } finally {
      await tg.stop();
    }
    try {
      const stored = storeText(dataDir);
      expect(stored).toContain('third');
      for (const secret of [API_KEY, TOKEN]) expect(stored).not.toContain(secret);
      // Unsealed at the next start, before the plugin is loaded.
      probe.__pluginSecretsProbe = { created: [] };
      const again = await startGateway(openAIConfig(upstream.url), {}, { dataDir });
      try {
        expect(lastCreated()).toMatchObject({ api_key: API_KEY, auth: { token: TOKEN }, mask: '****', note: 'third' });
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("keeps its secrets out of the gateway log when a plugin's request fails with an error quoting them", async () => {
    // A moderation call whose key travels in the URL (Perspective's ?key=) or in a header its HTTP client keeps on
    // the error it throws (axios' error.config.headers), as the plugin's run fails with it.
    const callerPath = join(dir, 'caller.mjs');
    writeFileSync(
      callerPath,
      `import { throwError, defer } from ${JSON.stringify(import.meta.resolve('rxjs'))};
      export default {
        name: 'caller',
        secretOptions: ['api_key'],
        create(options) {
          return {
            name: 'caller',
            run(ctx, next) {
              const model = ctx.request.model;
              if (model.endsWith('thrown')) throw new Error('POST https://moderation.example/check?key=' + options.api_key + ' failed: 403');
              if (model.endsWith('rejected')) return defer(async () => { throw new Error('rejected for key ' + options.api_key); });
              const err = Object.assign(new Error('Request failed with status code 401'), { config: { headers: { authorization: 'Bearer ' + options.api_key, region: options.region } } });
              return throwError(() => err);
            },
          };
        },
      };`,
    );
    const KEY = 'caller-key-DISTINCTIVE-4242';
    const REGION = 'caller-region-DISTINCTIVE-7373';
    const logged: string[] = [];
    const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) });
    const tg = await startGateway(
      openAIConfig(upstream.url, { plugins: [{ name: 'caller', path: callerPath, options: { api_key: 'env:CALLER_KEY', region: 'env:CALLER_REGION' } }] }),
      { CALLER_KEY: KEY, CALLER_REGION: REGION },
      { log },
    );
    try {
      for (const model of ['openai/thrown', 'openai/rejected', 'openai/errored']) {
        const failed = await tg.client.chat.completions.create({ model, messages }).then(
          () => null,
          (err: { status?: number }) => err.status,
        );
        expect(failed).toBe(500);
      }
      const said = logged.filter((line) => line.includes('"plugin":"caller"'));
      expect(said.some((line) => line.includes('key=****4242 failed'))).toBe(true);
      expect(said.some((line) => line.includes('rejected for key ****4242'))).toBe(true);
      expect(said.some((line) => line.includes('Bearer ****4242'))).toBe(true);
      for (const line of logged) for (const secret of [KEY, REGION]) expect(line).not.toContain(secret);
    } finally {
      await tg.stop();
    }
  });

  it('keeps the masked secrets of a list written back with an item removed or moved (endpoints.*.token)', async () => {
    const fanoutPath = join(dir, 'fanout.mjs');
    writeFileSync(
      fanoutPath,
      `const probe = () => (globalThis.__pluginSecretsProbe ??= { created: [] });
      export default {
        name: 'fanout',
        secretOptions: ['endpoints.*.token', 'signing_keys'],
        create(options) { probe().created.push(options); return null; },
      };`,
    );
    const A = 'endpoint-token-DISTINCTIVE-aaaa';
    const B = 'endpoint-token-DISTINCTIVE-bbbb';
    const C = 'endpoint-token-DISTINCTIVE-cccc';
    const OLD = 'signing-key-DISTINCTIVE-old-0001';
    const NEW = 'signing-key-DISTINCTIVE-new-0002';
    const tg = await startGateway(openAIConfig(upstream.url));
    const api = new AdminClient(tg.url);
    try {
      const options = {
        endpoints: [
          { url: 'https://a.example', token: A },
          { url: 'https://b.example', token: B },
          { url: 'https://c.example', token: C },
        ],
        signing_keys: [OLD, NEW],
      };
      expect((await api.patch('/api/config', { plugins: [{ name: 'fanout', path: fanoutPath, options }] })).status).toBe(200);

      // The dashboard's editor: the first endpoint and the old signing key removed (a key rotation finished), the rest
      // moved up a place, everything else sent back as read.
      const view = (await api.get('/api/config')).body;
      expect(view.plugins[0].options.signing_keys).toEqual([`****${OLD.slice(-4)}`, `****${NEW.slice(-4)}`]);
      view.plugins[0].options.endpoints.shift();
      view.plugins[0].options.signing_keys.shift();
      const removed = await api.put('/api/config', view);
      expect(removed.status).toBe(200);
      expect(lastCreated()).toEqual({ endpoints: [{ url: 'https://b.example', token: B }, { url: 'https://c.example', token: C }], signing_keys: [NEW] });

      // Swapped: each masked token still stands for its own endpoint's.
      const again = (await api.get('/api/config')).body;
      again.plugins[0].options.endpoints.reverse();
      expect((await api.put('/api/config', again)).status).toBe(200);
      expect((lastCreated() as unknown as { endpoints: unknown }).endpoints).toEqual([{ url: 'https://c.example', token: C }, { url: 'https://b.example', token: B }]);

      // A masked value that stands for no stored value in the list is still refused, naming its place.
      const unknown = (await api.get('/api/config')).body;
      unknown.plugins[0].options.endpoints[1].token = '****zzzz';
      const refused = await api.put('/api/config', unknown);
      expect(refused.status).toBe(400);
      expect(refused.body.error.param).toBe('plugins.0.options.endpoints.1.token');
      expectNoSecret(api);
      for (const seen of api.seen) for (const secret of [A, B, C, OLD, NEW]) expect(seen.text).not.toContain(secret);
    } finally {
      await tg.stop();
    }
  });

  it('masks, seals and restores a secret option that is a number (a PIN, an account number) and keeps it a number', async () => {
    const pagerPath = join(dir, 'pager.mjs');
    writeFileSync(
      pagerPath,
      `const probe = () => (globalThis.__pluginSecretsProbe ??= { created: [] });
      export default {
        name: 'pager',
        secretOptions: ['pin', 'account'],
        create(options) { probe().created.push(options); return null; },
      };`,
    );
    const PIN = 73914628;
    const ACCOUNT = 918273645546;
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-secrets-numbers-'));
    const options = { pin: PIN, account: { holder: 'ops-team-holder', number: ACCOUNT, active: true }, retries: 3 };
    try {
      const tg = await startGateway(openAIConfig(upstream.url), {}, { dataDir });
      const api = new AdminClient(tg.url);
      try {
        expect((await api.patch('/api/config', { plugins: [{ name: 'pager', path: pagerPath, options }] })).status).toBe(200);
        expect(lastCreated()).toEqual(options);
        const view = (await api.get('/api/config')).body;
        expect(view.plugins[0].options).toEqual({ pin: '****', account: { holder: '****lder', number: '****5546', active: true }, retries: 3 });
        // Written back as read with another option changed: the masked numbers stand for the stored ones, numbers still.
        view.plugins[0].options.retries = 4;
        expect((await api.put('/api/config', view)).status).toBe(200);
        expect(lastCreated()).toEqual({ ...options, retries: 4 });
        await api.get('/api/audit?limit=100');
        await api.get('/api/config?layer=api');
        for (const seen of api.seen) for (const secret of [String(PIN), String(ACCOUNT)]) expect(seen.text).not.toContain(secret);
      } finally {
        await tg.stop();
      }
      const stored = storeText(dataDir);
      for (const secret of [String(PIN), String(ACCOUNT)]) expect(stored).not.toContain(secret);
      probe.__pluginSecretsProbe = { created: [] };
      const again = await startGateway(openAIConfig(upstream.url), {}, { dataDir });
      try {
        expect(lastCreated()).toEqual({ ...options, retries: 4 });
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a masked value in a secret option of an entry no plugin was loaded under (a renamed entry, one copied from another gateway)', async () => {
    const relayPath = join(dir, 'relay.mjs');
    writeFileSync(
      relayPath,
      `const probe = () => (globalThis.__pluginSecretsProbe ??= { created: [] });
      export default { name: 'relay', secretOptions: ['token'], create(options) { probe().created.push(options); return null; } };`,
    );
    const RELAY = 'relay-token-DISTINCTIVE-6161';
    const tg = await startGateway(openAIConfig(upstream.url));
    const api = new AdminClient(tg.url);
    try {
      // Copied from another gateway's GET /api/config: the masked value is no token.
      const copied = await api.patch('/api/config', { plugins: [{ name: 'relay', path: relayPath, options: { token: '****6161', url: 'https://relay.example' } }] });
      expect(copied.status).toBe(400);
      expect(copied.body.error).toMatchObject({ code: 'invalid_config', param: 'plugins.0.options.token' });
      expect(copied.body.error.message).toContain('a masked secret (as GET /api/config shows one) stands for no stored value');
      expect(probe.__pluginSecretsProbe.created).toEqual([]);
      expect((await api.get('/api/config')).body.plugins).toEqual([]);

      expect((await api.patch('/api/config', { plugins: [{ name: 'relay', path: relayPath, options: { token: RELAY, url: 'https://relay.example' } }] })).status).toBe(200);
      // Renamed in the dashboard's editor: the masked token stood for the entry of the old name, not this one.
      const view = (await api.get('/api/config')).body;
      view.plugins[0].name = 'relay-eu';
      const renamed = await api.put('/api/config', view);
      expect(renamed.status).toBe(400);
      expect(renamed.body.error).toMatchObject({ code: 'invalid_config', param: 'plugins.0.options.token' });
      expect(lastCreated()).toEqual({ token: RELAY, url: 'https://relay.example' });
      expect((await api.get('/api/config')).body.plugins.map((entry: { name: string }) => entry.name)).toEqual(['relay']);
      // With the token itself, the rename is taken.
      view.plugins[0].options.token = RELAY;
      expect((await api.put('/api/config', view)).status).toBe(200);
      expect(lastCreated()).toEqual({ token: RELAY, url: 'https://relay.example' });
      for (const seen of api.seen) expect(seen.text).not.toContain(RELAY);
    } finally {
      await tg.stop();
    }
  });

  it('refuses to start on a reference it cannot read, naming the option', async () => {
    const started = startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'moderation', path: pluginPath, options: { api_key: 'env:MOD_KEY' } }] }), {});
    await expect(started).rejects.toThrow('plugins.0.options.api_key: environment variable MOD_KEY is not set');
    const missing = join(dir, 'no-such-secret');
    const fromFile = startGateway(openAIConfig(upstream.url, { plugins: [{ name: 'moderation', path: pluginPath, options: { api_key: `file:${missing}` } }] }), {});
    await expect(fromFile).rejects.toThrow(`plugins.0.options.api_key: cannot read ${missing}: ENOENT`);
  });

  it("keeps its secrets out of the error a plugin's create throws quoting them: at start, in a rejected file save (/health, GET /api/config, the log), through the API", async () => {
    // A plugin that checks its credentials when it makes its stage and says which one it refuses, quoting it (as
    // plugins, and the client libraries they build there, do): api_key is declared secret, region_token is not
    // but comes from a reference, which the operator wrote to keep the value out of the config.
    const strictPath = join(dir, 'strict-moderation.mjs');
    writeFileSync(
      strictPath,
      `export default {
        name: 'strict-moderation',
        secretOptions: ['api_key'],
        create(options) {
          if (options.api_key.endsWith('-BAD')) throw new Error('the service refused api_key ' + options.api_key + ' (region token ' + options.region_token + ')');
          return null;
        },
      };`,
    );
    const GOOD = 'strict-key-DISTINCTIVE-good-1111';
    const BAD = 'strict-key-DISTINCTIVE-refused-BAD';
    const REGION = 'region-token-DISTINCTIVE-3141';
    const entry = (options: Record<string, string>) => ({ name: 'strict-moderation', path: strictPath, options });

    // At start: the error names the plugin and the option's place, never the values.
    const started = startGateway(openAIConfig(upstream.url, { plugins: [entry({ api_key: 'env:STRICT_KEY', region_token: 'env:REGION' })] }), { STRICT_KEY: BAD, REGION });
    const refusal = await started.then(
      async (tg) => {
        await tg.stop();
        return null;
      },
      (err: Error) => err.message,
    );
    expect(refusal).toContain('plugins.0: plugin "strict-moderation" failed to create its stage: the service refused api_key ****-BAD');
    expect(refusal).not.toContain(BAD);
    expect(refusal).not.toContain(REGION);

    // A saved file whose secret file now holds a key the plugin refuses: the rejection is public on /health.
    const secretDir = mkdtempSync(join(tmpdir(), 'tollgate-plugin-secret-refused-'));
    const secretPath = join(secretDir, 'strict-key');
    writeFileSync(secretPath, `${GOOD}\n`);
    const configPath = join(secretDir, 'tollgate.config.yaml');
    writeFileSync(
      configPath,
      [
        'providers:',
        '  openai:',
        `    base_url: ${upstream.url}/v1`,
        '    api_key: sk-upstream-test',
        'plugins:',
        '  - name: strict-moderation',
        `    path: ${strictPath}`,
        '    options:',
        `      api_key: "file:${secretPath}"`,
        '      region_token: "env:REGION"',
        '',
      ].join('\n'),
    );
    const logged: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void logged.push(line) });
    const tg = await startGateway(parseConfigText(readFileSync(configPath, 'utf8'), configPath), { REGION }, { configPath, log });
    const api = new AdminClient(tg.url);
    try {
      writeFileSync(`${secretPath}.tmp`, `${BAD}\n`);
      renameSync(`${secretPath}.tmp`, secretPath);
      let health: AdminResponse | null = null;
      for (const deadline = Date.now() + 5000; Date.now() < deadline; await new Promise((done) => setTimeout(done, 20))) {
        health = await api.get('/health');
        if (health.body.config_file_rejection !== null) break;
      }
      expect(health?.body.config_file_rejection?.reason).toContain('plugins.0: plugin "strict-moderation" failed to create its stage: the service refused api_key ****-BAD');
      const view = await api.get('/api/config');
      expect(view.body.file_rejection.reason).toContain('****-BAD');

      // Through the API: the caller's own literal key is not echoed to it or logged either.
      const patched = await api.patch('/api/config', { plugins: [entry({ api_key: BAD, region_token: 'plain-region' })] });
      expect(patched.status).toBe(400);
      expect(patched.body.error.message).toContain('failed to create its stage: the service refused api_key ****-BAD (region token plain-region)');

      for (const seen of api.seen) for (const secret of [BAD, REGION]) expect(seen.text).not.toContain(secret);
      for (const line of logged) for (const secret of [BAD, REGION]) expect(line).not.toContain(secret);
    } finally {
      await tg.stop();
      rmSync(secretDir, { recursive: true, force: true });
    }
  });

  it('gives the plugin a file: secret read again when its file is rewritten (a rotated Kubernetes Secret)', async () => {
    const secretPath = join(mkdtempSync(join(tmpdir(), 'tollgate-plugin-secret-file-')), 'moderation-key');
    writeFileSync(secretPath, `${FILE_KEY_1}\n`);
    const configPath = join(dir, 'tollgate.config.yaml');
    const yaml = [
      'providers:',
      '  openai:',
      `    base_url: ${upstream.url}/v1`,
      '    api_key: sk-upstream-test',
      'plugins:',
      '  - name: moderation',
      `    path: ${pluginPath}`,
      '    options:',
      `      api_key: "file:${secretPath}"`,
      `      auth: { token: ${TOKEN} }`,
      '',
    ].join('\n');
    writeFileSync(configPath, yaml);
    const tg = await startGateway(parseConfigText(readFileSync(configPath, 'utf8'), configPath), {}, { configPath });
    const api = new AdminClient(tg.url);
    try {
      expect(lastCreated()?.api_key).toBe(FILE_KEY_1);
      expect(await keyTail(tg.client)).toBe(FILE_KEY_1.slice(-4));
      writeFileSync(`${secretPath}.tmp`, `${FILE_KEY_2}\n`);
      renameSync(`${secretPath}.tmp`, secretPath);
      await until(() => lastCreated()?.api_key === FILE_KEY_2);
      expect(await keyTail(tg.client)).toBe(FILE_KEY_2.slice(-4));
      expect((await api.get('/api/config')).body.plugins[0].options).toEqual({ api_key: `file:${secretPath}`, auth: { token: `****${TOKEN.slice(-4)}` } });
      // The reload is audited with the file's config before and after, its literal secret masked.
      const audit = await api.get('/api/audit?limit=100');
      const reloaded = audit.body.data.find((item: { action: string }) => item.action === 'file.reloaded');
      expect(reloaded.after.plugins[0].options.auth.token).toBe(`****${TOKEN.slice(-4)}`);
      expectNoSecret(api);
    } finally {
      await tg.stop();
      rmSync(configPath, { force: true });
    }
  });
});
