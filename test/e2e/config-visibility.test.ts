import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { AdminClient } from '../helpers/admin.js';
import { parseConfigText } from '../../src/config/load-file.js';
import { createGateway } from '../../src/gateway.js';

let upstream: ScriptedUpstream;
const dirs: string[] = [];
const messages = [{ role: 'user' as const, content: 'hi' }];

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

/** Writes the file the way editors do: a new file renamed over the old one. */
function saveAtomically(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

async function until<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not reached in time; last value: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function getJson(url: string): Promise<any> {
  return (await fetch(url)).json();
}

async function chat(url: string, model: string): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages }),
  });
  return { status: response.status, body: await response.json() };
}

function fileYaml(routes: string[]): string {
  return [
    'providers:',
    '  lab:',
    '    type: openai',
    `    base_url: ${upstream.url}/v1`,
    'routes:',
    ...routes.flatMap((name) => [`  ${name}:`, '    targets: [{ model: lab/m }]']),
    '',
  ].join('\n');
}

describe('a rejected config file save is visible beyond the log', () => {
  let tg: RunningGateway;
  let path: string;
  let api: AdminClient;

  beforeEach(async () => {
    path = join(tempDir('tollgate-visibility-'), 'tollgate.config.yaml');
    writeFileSync(path, fileYaml(['old-route']));
    tg = await startGateway(parseConfigText(readFileSync(path, 'utf8'), path), {}, { configPath: path });
    api = new AdminClient(tg.url);
  });
  afterEach(async () => {
    await tg.stop();
  });

  it('/health and GET /api/config show the rejection and its reason; a route only that file defines 404s saying so', async () => {
    expect((await getJson(`${tg.url}/health`)).config_file_rejection).toBeNull();
    expect((await api.get('/api/config')).body.file_rejection).toBeNull();

    // The new route is fine, but a weight of zero elsewhere makes the schema reject the whole file.
    saveAtomically(path, `${fileYaml(['old-route', 'new-route'])}  broken:\n    targets: [{ model: lab/m, weight: 0 }]\n`);
    const health = await until(() => getJson(`${tg.url}/health`), (body) => body.config_file_rejection !== null);
    expect(health.status).toBe('ok');
    expect(health.config_file_rejection).toMatchObject({ file: path });
    expect(health.config_file_rejection.reason).toContain('routes.broken.targets.0.weight');
    expect(Date.parse(health.config_file_rejection.at)).not.toBeNaN();
    const config = (await api.get('/api/config')).body;
    expect(config.file_rejection).toEqual(health.config_file_rejection);

    const missing = await chat(tg.url, 'new-route');
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain('is a route defined in the config file');
    expect(missing.body.error.message).toContain('but the file was rejected');
    expect(missing.body.error.message).toContain('routes.broken.targets.0.weight');
    // The running config still serves what it had.
    expect((await chat(tg.url, 'old-route')).status).toBe(200);
    // A name no file defines keeps the ordinary answer.
    expect((await chat(tg.url, 'nowhere')).body.error.message).not.toContain('rejected');

    // The next accepted save clears it, and the route serves.
    saveAtomically(path, fileYaml(['old-route', 'new-route']));
    await until(() => getJson(`${tg.url}/health`), (body) => body.config_file_rejection === null);
    expect((await api.get('/api/config')).body.file_rejection).toBeNull();
    expect((await chat(tg.url, 'new-route')).status).toBe(200);
  });

  it('a file that is not even YAML is reported in one line that quotes none of the file', async () => {
    const secret = 'sk-DISTINCTIVE-in-broken-yaml-77aa';
    saveAtomically(path, `providers:\n  lab: { type: openai, api_key: ${secret}\n    base_url: [unclosed\n`);
    const health = await until(() => getJson(`${tg.url}/health`), (body) => body.config_file_rejection !== null);
    expect(health.config_file_rejection.reason).toMatch(/not valid YAML/);
    expect(health.config_file_rejection.reason).not.toContain('\n');
    expect(JSON.stringify(health)).not.toContain(secret);
    expect((await api.get('/api/config')).text).not.toContain(secret);
  });
});

describe('a route that points to a provider with no key is reported, not silently dropped', () => {
  it('as a config warning in GET /api/config and the log, and in the route health view', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const dataDir = tempDir('tollgate-warn-');
    const gateway = await createGateway({
      config: {
        settings: { data_dir: dataDir },
        providers: { lab: { type: 'openai', base_url: `${upstream.url}/v1` } },
        routes: {
          chat: { targets: [{ model: 'lab/m' }], fallbacks: ['anthropic/claude-sonnet-4-5', 'backup'] },
          backup: { targets: [{ model: 'groq/llama-3.1-8b-instant' }] },
        },
      },
      env: {},
      log: pino({ level: 'warn' }, sink),
    });
    const url = await gateway.listen({ port: 0, host: '127.0.0.1' });
    try {
      const api = new AdminClient(url);
      const warnings = (await api.get('/api/config')).body.warnings as Array<{ field: string; message: string }>;
      expect(warnings.map((warning) => warning.field).sort()).toEqual(['routes.backup.targets.0.model', 'routes.chat.fallbacks.0']);
      expect(warnings.find((warning) => warning.field === 'routes.chat.fallbacks.0')?.message).toMatch(/provider 'anthropic' has no API key \(set ANTHROPIC_API_KEY/);
      const logged = lines.join('');
      expect(logged).toContain('routes.chat.fallbacks.0');
      expect(logged).toContain('routes.backup.targets.0.model');

      const health = await api.get('/api/routes/chat/health');
      expect(health.status).toBe(200);
      expect(health.body.unavailable).toEqual([
        expect.objectContaining({ target: 'anthropic/claude-sonnet-4-5', role: 'fallback', via: 'chat', code: 'provider_key_missing' }),
        expect.objectContaining({ target: 'groq/llama-3.1-8b-instant', role: 'fallback', via: 'backup', code: 'provider_key_missing' }),
      ]);
      expect(health.body.groups.map((group: { name: string }) => group.name)).toEqual(['chat']);
      // A route none of whose targets can be served still has a health view, saying why.
      const backup = await api.get('/api/routes/backup/health');
      expect(backup.status).toBe(200);
      expect(backup.body.groups).toEqual([]);
      expect(backup.body.unavailable[0]).toMatchObject({ target: 'groq/llama-3.1-8b-instant', role: 'primary' });

      // Configuring the key clears the warning; a new one added through the API is logged when applied.
      expect((await api.post('/api/providers/anthropic/keys', { value: 'sk-ant-visibility-key-0001' })).status).toBe(201);
      expect((await api.get('/api/config')).body.warnings.map((warning: { field: string }) => warning.field)).toEqual(['routes.backup.targets.0.model']);
      expect((await api.get('/api/routes/chat/health')).body.unavailable).toHaveLength(1);
      lines.length = 0;
      expect((await api.put('/api/routes/more', { targets: [{ model: 'lab/m' }], fallbacks: ['mistral/mistral-small-latest'] })).status).toBe(201);
      expect(lines.join('')).toContain('routes.more.fallbacks.0');
      expect(lines.join('')).not.toContain('routes.backup.targets.0.model');
    } finally {
      await gateway.close(500);
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
