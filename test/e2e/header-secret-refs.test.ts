import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway } from '../helpers/gateway.js';
import { AdminClient } from '../helpers/admin.js';
import { parseConfigText } from '../../src/config/load-file.js';

/** A credential header (Azure API Management's subscription key) read from the environment, and its value. */
const APIM_HEADER = 'Ocp-Apim-Subscription-Key';
const APIM_SECRET = 'apim-subscription-DISTINCTIVE-4c1d9e0001';
const messages = [{ role: 'user' as const, content: 'hi' }];

let upstream: ScriptedUpstream;
const dirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

function saveAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((done) => setTimeout(done, 20));
  }
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

describe('header values written as env: and file: references', () => {
  it('sends the environment value of an env: header, shows and keeps the reference through every read and write-back', async () => {
    const tg = await startGateway(
      { providers: { apim: { type: 'openai', base_url: `${upstream.url}/v1`, headers: { [APIM_HEADER]: 'env:APIM_KEY', 'x-team': 'research' } } } },
      { APIM_KEY: APIM_SECRET },
    );
    const api = new AdminClient(tg.url);
    try {
      await tg.client.chat.completions.create({ model: 'apim/m', messages });
      expect(upstream.calls[0]?.headers['ocp-apim-subscription-key']).toBe(APIM_SECRET);
      expect(upstream.calls[0]?.headers['x-team']).toBe('research');

      const view = await api.get('/api/config');
      expect(view.status).toBe(200);
      const shown = view.body.providers.find((provider: { name: string }) => provider.name === 'apim');
      expect(shown.headers).toEqual({ [APIM_HEADER]: 'env:APIM_KEY', 'x-team': 'research' });
      expect((await api.get('/api/providers/apim')).body.headers[APIM_HEADER]).toBe('env:APIM_KEY');

      // The dashboard's save: the effective view written back, one field changed.
      shown.timeouts = { ...shown.timeouts, first_byte_ms: 12_345 };
      const saved = await api.put('/api/config', view.body);
      expect(saved.status).toBe(200);
      // A provider read and written back through its own endpoint.
      const provider = (await api.get('/api/providers/apim')).body;
      const replaced = await api.put('/api/providers/apim', { ...provider, models: ['m'] });
      expect(replaced.status).toBe(200);
      expect(replaced.body.headers[APIM_HEADER]).toBe('env:APIM_KEY');

      const layer = (await api.get('/api/config?layer=api')).body;
      // The header stays the file's: the API layer holds neither the reference nor the value.
      expect(layer.providers.apim.headers?.[APIM_HEADER]).toBeUndefined();
      expect(layer.providers.apim.timeouts.first_byte_ms).toBe(12_345);

      upstream.reset();
      await tg.client.chat.completions.create({ model: 'apim/m', messages });
      expect(upstream.calls[0]?.headers['ocp-apim-subscription-key']).toBe(APIM_SECRET);

      const audit = await api.get('/api/audit?limit=50');
      expect(audit.status).toBe(200);
      for (const seen of api.seen) expect(seen.text).not.toContain(APIM_SECRET);
    } finally {
      await tg.stop();
    }
  });

  it('reads a file: header again at the next request after its file is rewritten', async () => {
    const secretPath = join(tempDir('tollgate-hdr-secret-'), 'cf-aig-token');
    writeFileSync(secretPath, 'cf-token-first-0001\n');
    const configPath = join(tempDir('tollgate-hdr-config-'), 'tollgate.config.yaml');
    const yaml = ['providers:', '  cf:', '    type: openai', `    base_url: ${upstream.url}/v1`, '    headers:', `      cf-aig-authorization: "file:${secretPath}"`, ''].join('\n');
    writeFileSync(configPath, yaml);
    const tg = await startGateway(parseConfigText(readFileSync(configPath, 'utf8'), configPath), {}, { configPath });
    try {
      await tg.client.chat.completions.create({ model: 'cf/m', messages });
      saveAtomically(secretPath, 'cf-token-second-0002\n');
      await until(() => tg.gateway.configService.current().providers.get('cf')?.headers['cf-aig-authorization'] === 'cf-token-second-0002');
      await tg.client.chat.completions.create({ model: 'cf/m', messages });
      expect(upstream.calls.map((call) => call.headers['cf-aig-authorization'])).toEqual(['cf-token-first-0001', 'cf-token-second-0002']);
      const view = await new AdminClient(tg.url).get('/api/providers/cf');
      expect(view.body.headers['cf-aig-authorization']).toBe(`file:${secretPath}`);
      expect(view.text).not.toContain('cf-token-');
      // A save naming a variable that is not set is refused, the header named; the running config stays.
      saveAtomically(configPath, yaml.replace(`"file:${secretPath}"`, 'env:CF_AIG_TOKEN'));
      await until(() => tg.gateway.configService.fileRejection() !== null);
      expect(tg.gateway.configService.fileRejection()?.reason).toContain('providers.cf.headers.cf-aig-authorization: environment variable CF_AIG_TOKEN is not set');
      await tg.client.chat.completions.create({ model: 'cf/m', messages });
      expect(upstream.calls[2]?.headers['cf-aig-authorization']).toBe('cf-token-second-0002');
    } finally {
      await tg.stop();
    }
  });

  it('keeps the key it has while a file: secret is empty (a rotation caught between truncating and writing), and refuses an empty one at start', async () => {
    const secretPath = join(tempDir('tollgate-key-empty-'), 'api-key');
    writeFileSync(secretPath, 'cf-token-first-0001\n');
    const configPath = join(tempDir('tollgate-key-empty-config-'), 'tollgate.config.yaml');
    const yaml = ['providers:', '  cf:', '    type: openai', `    base_url: ${upstream.url}/v1`, '    headers:', `      cf-aig-authorization: "file:${secretPath}"`, ''].join('\n');
    writeFileSync(configPath, yaml);
    const tg = await startGateway(parseConfigText(readFileSync(configPath, 'utf8'), configPath), {}, { configPath });
    try {
      const before = upstream.calls.length;
      // A writer that truncates the file before writing the new secret (echo > file, a non-atomic copy).
      writeFileSync(secretPath, '');
      await until(() => tg.gateway.configService.fileRejection() !== null);
      expect(tg.gateway.configService.fileRejection()?.reason).toContain(`providers.cf.headers.cf-aig-authorization: ${secretPath} is empty`);
      await tg.client.chat.completions.create({ model: 'cf/m', messages });
      expect(upstream.calls[before]?.headers['cf-aig-authorization']).toBe('cf-token-first-0001');
      writeFileSync(secretPath, 'cf-token-second-0002\n');
      await until(() => tg.gateway.configService.current().providers.get('cf')?.headers['cf-aig-authorization'] === 'cf-token-second-0002');
    } finally {
      await tg.stop();
    }
    await (await startGateway({ providers: { cf: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: `file:${secretPath}` } } }, {})).stop();
    writeFileSync(secretPath, '\n');
    await expect(startGateway({ providers: { cf: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: `file:${secretPath}` } } }, {})).rejects.toThrow(`${secretPath} is empty`);
  });

  it('refuses a reference it cannot read, naming the header, and one sent through the API with a 400', async () => {
    const config = { providers: { apim: { type: 'openai', base_url: `${upstream.url}/v1`, headers: { [APIM_HEADER]: 'env:APIM_KEY' } } } };
    await expect(startGateway(config, {})).rejects.toThrow(`providers.apim.headers.${APIM_HEADER}: environment variable APIM_KEY is not set`);
    await expect(startGateway({ providers: { apim: { ...config.providers.apim, headers: { 'x-api-key': 'file:/nonexistent/tollgate-key' } } } }, {})).rejects.toThrow(
      'providers.apim.headers.x-api-key: cannot read /nonexistent/tollgate-key: ENOENT',
    );

    const tg = await startGateway({}, { APIM_KEY: APIM_SECRET });
    const api = new AdminClient(tg.url);
    try {
      const put = await api.put('/api/providers/thief', { type: 'openai', base_url: `${upstream.url}/v1`, headers: { 'x-leak': 'env:APIM_KEY' } });
      expect(put.status).toBe(400);
      expect(put.body.error.param).toBe('providers.thief.headers.x-leak');
      expect(put.body.error.message).toMatch(/references are accepted only in the config file/);
      const patch = await api.patch('/api/config', { providers: { thief: { type: 'openai', base_url: `${upstream.url}/v1`, headers: { [APIM_HEADER]: 'env:APIM_KEY' } } } });
      expect(patch.status).toBe(400);
      expect(patch.body.error.param).toBe(`providers.thief.headers.${APIM_HEADER}`);
      expect((await api.get('/api/providers/thief')).status).toBe(404);
      expect(upstream.calls).toHaveLength(0);
    } finally {
      await tg.stop();
    }
  });
});

/** A server that records the headers of every request and answers 200 with an empty JSON object. */
async function headerRecorder(): Promise<{ url: string; seen: IncomingHttpHeaders[]; close(): Promise<void> }> {
  const seen: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((done) => {
      server.closeAllConnections();
      server.close(() => done());
    }),
  };
}

describe('a header stored through the API by a version that sent it as written', () => {
  it('is left out at start when it reads as a reference, never resolved, and the provider stays', async () => {
    const dataDir = tempDir('tollgate-hdr-stored-');
    const first = await startGateway({}, {}, { dataDir });
    await first.gateway.store.config.save({ providers: { legacy: { type: 'openai', base_url: `${upstream.url}/v1`, headers: { 'x-note': 'env:APIM_KEY', 'x-team': 'research' } } } }, 5);
    await first.stop();
    const tg = await startGateway({}, { APIM_KEY: APIM_SECRET }, { dataDir });
    try {
      await tg.client.chat.completions.create({ model: 'legacy/m', messages });
      expect(upstream.calls[0]?.headers['x-team']).toBe('research');
      expect(upstream.calls[0]?.headers['x-note']).toBeUndefined();
      expect(JSON.stringify(upstream.calls[0]?.headers)).not.toContain(APIM_SECRET);
    } finally {
      await tg.stop();
    }
  });
});

describe('header references beyond providers: MCP servers, alert webhooks, the trace collector', () => {
  it('sends what each reference reads, and refuses one it cannot read naming the header', async () => {
    const tokenPath = join(tempDir('tollgate-hdr-mcp-'), 'mcp-gateway-key');
    writeFileSync(tokenPath, 'mcp-gateway-key-DISTINCTIVE-0005\n');
    const mcp = await headerRecorder();
    const hook = await headerRecorder();
    const collector = await headerRecorder();
    const env = { HOOK_AUTH: 'Bearer hook-DISTINCTIVE-0006', OTLP_AUTH: 'Bearer otlp-DISTINCTIVE-0007' };
    const config = {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
      mcp: { servers: { gated: { type: 'http' as const, url: `${mcp.url}/mcp`, headers: { 'x-api-key': `file:${tokenPath}` } } } },
      alerts: { channels: { ops: { type: 'webhook' as const, url: `${hook.url}/hook`, headers: { authorization: 'env:HOOK_AUTH' } } } },
      settings: { tracing: { endpoint: `${collector.url}/v1/traces`, headers: { authorization: 'env:OTLP_AUTH' }, protocol: 'http/json' as const } },
    };
    try {
      const tg = await startGateway(config, env);
      const api = new AdminClient(tg.url);
      try {
        await until(() => mcp.seen.length > 0);
        expect(mcp.seen[0]?.['x-api-key']).toBe('mcp-gateway-key-DISTINCTIVE-0005');
        expect((await api.post('/api/alerts/channels/ops/test')).status).toBe(200);
        expect(hook.seen[0]?.authorization).toBe('Bearer hook-DISTINCTIVE-0006');
        await tg.client.chat.completions.create({ model: 'openai/m', messages });
        await until(() => collector.seen.length > 0, 10_000);
        expect(collector.seen[0]?.authorization).toBe('Bearer otlp-DISTINCTIVE-0007');
        for (const path of ['/api/config', '/api/config?layer=api', '/api/mcp', '/api/alerts', '/api/audit?limit=50']) await api.get(path);
        for (const seen of api.seen) expect(seen.text).not.toMatch(/DISTINCTIVE/);
      } finally {
        await tg.stop();
      }
      const { HOOK_AUTH: _unset, ...withoutHook } = env;
      await expect(startGateway(config, withoutHook)).rejects.toThrow('alerts.channels.ops.headers.authorization: environment variable HOOK_AUTH is not set');
      const { OTLP_AUTH: _gone, ...withoutOtlp } = env;
      await expect(startGateway(config, withoutOtlp)).rejects.toThrow('settings.tracing.headers.authorization: environment variable OTLP_AUTH is not set');
      rmSync(tokenPath);
      await expect(startGateway(config, env)).rejects.toThrow(`mcp.servers.gated.headers.x-api-key: cannot read ${tokenPath}: ENOENT`);
    } finally {
      await mcp.close();
      await hook.close();
      await collector.close();
    }
  });

  it('refuses references in those headers through the API, naming the header', async () => {
    const tg = await startGateway({}, { HOOK_AUTH: 'Bearer hook-DISTINCTIVE-0008' });
    const api = new AdminClient(tg.url);
    try {
      const attempts: Array<[string, unknown, string]> = [
        ['/api/config', { mcp: { servers: { thief: { type: 'http', url: 'http://127.0.0.1:1/mcp', headers: { 'x-leak': 'env:HOOK_AUTH' } } } } }, 'mcp.servers.thief.headers.x-leak'],
        ['/api/config', { alerts: { channels: { thief: { type: 'webhook', url: 'http://127.0.0.1:1/hook', headers: { 'x-leak': 'env:HOOK_AUTH' } } } } }, 'alerts.channels.thief.headers.x-leak'],
        ['/api/config', { settings: { tracing: { endpoint: 'http://127.0.0.1:1/v1/traces', headers: { 'x-leak': 'env:HOOK_AUTH' } } } }, 'settings.tracing.headers.x-leak'],
      ];
      for (const [path, body, param] of attempts) {
        const response = await api.patch(path, body);
        expect(response.status).toBe(400);
        expect(response.body.error.param).toBe(param);
        expect(response.body.error.message).toMatch(/references are accepted only in the config file/);
      }
    } finally {
      await tg.stop();
    }
  });
});

describe("the trace collector's headers edited in the effective view", () => {
  it("keeps the file's credential header when a header is added, and says why when that header is a reference", async () => {
    const endpoint = 'http://127.0.0.1:1/v1/traces';
    const tg = await startGateway({ settings: { tracing: { endpoint, headers: { authorization: 'Bearer literal-otlp-0009' } } } }, {});
    const api = new AdminClient(tg.url);
    try {
      const view = (await api.get('/api/config')).body;
      expect(view.settings.tracing.headers).toEqual({ authorization: '***' });
      view.settings.tracing.headers['x-scope'] = 'tenant-a';
      const put = await api.put('/api/config', view);
      expect(put.status).toBe(200);
      // The API's headers replace the file's whole: the file's authorization goes with them, not dropped.
      expect(tg.gateway.configService.current().settings.tracing.headers).toEqual({ authorization: 'Bearer literal-otlp-0009', 'x-scope': 'tenant-a' });
      // Taking a header out of the view takes it out of what is sent.
      const again = (await api.get('/api/config')).body;
      delete again.settings.tracing.headers['x-scope'];
      expect((await api.put('/api/config', again)).status).toBe(200);
      expect(tg.gateway.configService.current().settings.tracing.headers).toEqual({ authorization: 'Bearer literal-otlp-0009' });
    } finally {
      await tg.stop();
    }

    const referenced = await startGateway({ settings: { tracing: { endpoint, headers: { authorization: 'env:OTLP_AUTH' } } } }, { OTLP_AUTH: 'Bearer otlp-DISTINCTIVE-0010' });
    const admin = new AdminClient(referenced.url);
    try {
      const view = (await admin.get('/api/config')).body;
      view.settings.tracing.headers['x-scope'] = 'tenant-a';
      const put = await admin.put('/api/config', view);
      expect(put.status).toBe(409);
      expect(put.body.error.param).toBe('settings.tracing.headers.authorization');
      expect(put.body.error.message).toMatch(/reference in the config file, which the API cannot hold/);
      expect(referenced.gateway.configService.current().settings.tracing.headers).toEqual({ authorization: 'Bearer otlp-DISTINCTIVE-0010' });
      for (const seen of admin.seen) expect(seen.text).not.toMatch(/DISTINCTIVE/);
    } finally {
      await referenced.stop();
    }
  });
});

describe("the config file's MCP servers copied through the API", () => {
  it('says a header read from a reference cannot be carried into the API, rather than calling its mask unknown', async () => {
    const tokenPath = join(tempDir('tollgate-hdr-mcp-copy-'), 'mcp-key');
    writeFileSync(tokenPath, 'mcp-copy-DISTINCTIVE-0011\n');
    const tg = await startGateway({ mcp: { servers: { gated: { type: 'http', url: 'http://127.0.0.1:1/mcp', headers: { 'x-api-key': `file:${tokenPath}` } } } } }, {});
    const api = new AdminClient(tg.url);
    try {
      // The dashboard's add with the file's servers in force: those servers as /api/mcp shows them, plus the new one.
      const shown = (await api.get('/api/mcp')).body.servers as Array<{ name: string; config: Record<string, unknown> }>;
      const servers = Object.fromEntries(shown.map((server) => [server.name, server.config]));
      const patch = await api.patch('/api/config', { mcp: { servers: { ...servers, extra: { type: 'http', url: 'http://127.0.0.1:1/other' } } } });
      expect(patch.status).toBe(409);
      expect(patch.body.error.param).toBe('mcp.servers.gated.headers.x-api-key');
      expect(patch.body.error.message).toMatch(/reference in the config file, which the API cannot hold/);
      for (const seen of api.seen) expect(seen.text).not.toMatch(/DISTINCTIVE/);
    } finally {
      await tg.stop();
    }
  });
});
