import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load-file.js';
import { AdminClient } from '../helpers/admin.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { childEnv, repoRoot } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A blank provider key (`api_key: ""`, spaces only, an env: reference to a variable holding only spaces, or a
 * compose placeholder `${OPENAI_API_KEY}` nothing expanded) is a config error naming the provider and the field:
 * the start stops with that line, and the admin API answers 400. It is never sent upstream as an empty credential.
 * A blank provider variable in the environment counts as unset, so a zero-config start still runs.
 */
const execFileAsync = promisify(execFile);
const tsxLoader = pathToFileURL(join(repoRoot, 'node_modules/tsx/dist/loader.mjs')).href;
const mainScript = join(repoRoot, 'src/main.ts');
const dirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-blank-'));
  dirs.push(dir);
  return dir;
}

let upstream: ScriptedUpstream;
let taken: Server;
let takenPort: number;
beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-real' });
  taken = createServer();
  await new Promise<void>((done) => taken.listen(0, '127.0.0.1', done));
  takenPort = (taken.address() as AddressInfo).port;
});
afterAll(async () => {
  await upstream.close();
  await new Promise((done) => taken.close(done));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Loads a config file and starts a gateway on it in-process, as `serve` does; the start's error message, or null. */
async function startFrom(yaml: string, env: Record<string, string> = {}): Promise<string | null> {
  const cwd = tempDir();
  writeFileSync(join(cwd, 'tollgate.config.yaml'), yaml);
  try {
    const file = loadConfigFile({ TOLLGATE_CONFIG: 'tollgate.config.yaml' }, cwd);
    const tg = await startGateway(file.config, env);
    await tg.stop();
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Starts the gateway from a config file as `npm start` does, with the address taken; returns its exit and output. */
async function start(yaml: string, env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  const cwd = tempDir();
  writeFileSync(join(cwd, 'tollgate.config.yaml'), yaml);
  try {
    // The port is taken: a config that loads fails there instead, so the run always ends.
    await execFileAsync(process.execPath, ['--import', tsxLoader, mainScript, '--port', String(takenPort), '--host', '127.0.0.1'], { cwd, env: childEnv({ TOLLGATE_DATA_DIR: join(cwd, 'data'), ...env }, cwd), timeout: 100_000 });
    return { code: 0, stderr: '' };
  } catch (err) {
    const failed = err as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
  }
}

describe('a blank key in the config file', () => {
  it('stops a real start (the process npm start runs) with one line naming the provider and the field', async () => {
    const [blank, empty] = await Promise.all([start('providers:\n  openai:\n    api_key: "   "\n'), start('providers:\n  openai:\n    api_key: ""\n')]);
    expect(blank.code).toBe(1);
    expect(blank.stderr.trim()).toMatch(/^tollgate: configuration error: .*providers\.openai\.api_key: is blank/);
    expect(empty.stderr.trim()).toMatch(/^tollgate: configuration error: .*providers\.openai\.api_key: is blank/);
  }, 120_000);

  it('names a blank key in a keys list, an env: variable holding spaces, and an unexpanded ${VAR}', async () => {
    expect(await startFrom('providers:\n  groq:\n    keys: [{ value: "sk-ok" }, { value: " " }]\n')).toContain('providers.groq.keys.1.value: is blank');
    expect(await startFrom('providers:\n  openai:\n    api_key: env:MY_OPENAI_KEY\n', { MY_OPENAI_KEY: '  ' })).toContain(
      'providers.openai.api_key: the key read from environment variable MY_OPENAI_KEY is blank',
    );
    const placeholder = await startFrom('providers:\n  openai:\n    api_key: "${OPENAI_API_KEY}"\n');
    expect(placeholder).toContain('providers.openai.api_key: ${OPENAI_API_KEY} is not expanded');
    expect(placeholder).toContain('write env:OPENAI_API_KEY');
  }, 60_000);
});

describe('a blank provider variable in the environment', () => {
  it('counts as unset: the provider is not given a blank key, and a zero-config gateway still starts', async () => {
    const tg: RunningGateway = await startGateway({}, { OPENAI_API_KEY: '   ', OPENAI_BASE_URL: `${upstream.url}/v1` });
    try {
      expect(tg.gateway.configService.current().providers.get('openai')?.keys).toEqual([]);
      const models = await tg.client.models.list();
      expect(models.data.length).toBeGreaterThan(0);
    } finally {
      await tg.stop();
    }
  }, 60_000);
});

describe('a blank key through the admin API', () => {
  it('is a 400 naming the provider and the field, and nothing changes', async () => {
    const tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-real' } } });
    try {
      const admin = new AdminClient(tg.url);
      const version = tg.gateway.configService.current().version;
      for (const api_key of ['', '   ']) {
        const put = await admin.put('/api/providers/openai', { api_key });
        expect(put.status).toBe(400);
        expect(put.body.error).toMatchObject({ code: 'invalid_config', param: 'providers.openai.api_key' });
        expect(put.body.error.message).toContain('providers.openai.api_key: is blank');
      }
      const key = await admin.post('/api/providers/openai/keys', { value: '\t ' });
      expect(key.status).toBe(400);
      expect(key.body.error.message).toContain('is blank');
      const config = await admin.put('/api/config', { providers: { lab: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: ' ' } } });
      expect(config.status).toBe(400);
      expect(config.body.error.param).toBe('providers.lab.api_key');
      expect(tg.gateway.configService.current().version).toBe(version);
      // The key configured is still the one sent.
      await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
      expect(upstream.calls.at(-1)?.headers.authorization).toBe('Bearer sk-real');
    } finally {
      await tg.stop();
    }
  });
});
