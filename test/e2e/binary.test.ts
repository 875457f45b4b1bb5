import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childEnv, repoRoot, tryConnect } from '../helpers/main-process.js';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The single executable (`npm run build:binary`): built here, started from its folder like an operator would
 * (`./tollgate --config ... --port ...`), answering the official openai SDK through a scripted upstream, then killed,
 * leaving its port closed.
 */
const run = promisify(execFile);
const BUILD_TIMEOUT_MS = 300_000;
const binary = join(repoRoot, 'dist-bin/tollgate');

let dir = '';
let upstream: ScriptedUpstream;
let gateway: ChildProcess | null = null;

beforeAll(async () => {
  const tsx = join(repoRoot, 'node_modules/tsx/dist/cli.mjs');
  await run(process.execPath, [tsx, join(repoRoot, 'scripts/build-binary.ts')], { cwd: repoRoot, env: childEnv({}, repoRoot), timeout: BUILD_TIMEOUT_MS });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-binary-'));
  upstream = await startOpenAIUpstream();
}, BUILD_TIMEOUT_MS);

afterAll(async () => {
  if (gateway && gateway.exitCode === null && gateway.signalCode === null) gateway.kill('SIGKILL');
  await upstream?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the single binary', () => {
  it('is an executable with its runtime packages, worker scripts and dashboard beside it', async () => {
    expect(statSync(binary).mode & 0o111).not.toBe(0);
    for (const beside of ['node_modules/lmdb/package.json', 'node_modules/hnswlib-node/package.json', 'node_modules/tsx/package.json', 'lib/cache/index-builder-worker.mjs', 'package.json']) {
      expect(existsSync(join(repoRoot, 'dist-bin', beside)), beside).toBe(true);
    }
    // fastify and the rest of the pure-JS dependencies are inside the executable, not beside it.
    expect(existsSync(join(repoRoot, 'dist-bin/node_modules/fastify'))).toBe(false);
    const { stdout } = await run(binary, ['--version'], { cwd: dir, env: childEnv({}, dir), timeout: 30_000 });
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  }, 40_000);

  it('serves a chat through the openai SDK and stops when killed, closing its port', async () => {
    const port = await freePort();
    writeFileSync(join(dir, 'config.yaml'), `providers:\n  openai: { base_url: "${upstream.url}/v1", api_key: sk-upstream-test }\nroutes:\n  chat: { targets: [{ model: openai/gpt-4o-mini }] }\n`);
    const child = spawn(binary, ['--config', 'config.yaml', '--port', String(port), '--host', '127.0.0.1'], { cwd: dir, env: childEnv({ TOLLGATE_DATA_DIR: join(dir, 'data') }, dir), stdio: ['ignore', 'pipe', 'pipe'] });
    gateway = child;
    let output = '';
    child.stdout.on('data', (data: Buffer) => (output += data.toString()));
    child.stderr.on('data', (data: Buffer) => (output += data.toString()));
    const exited = new Promise<NodeJS.Signals | null>((done) => child.once('exit', (_code, signal) => done(signal)));
    const deadline = Date.now() + 20_000;
    while (!(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false))) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`the binary did not become healthy:\n${output}`);
      await new Promise((done) => setTimeout(done, 100));
    }
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hello binary' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: hello binary');
    expect(completion.model).toBe('chat');
    const chunks: string[] = [];
    for await (const chunk of await client.chat.completions.create({ model: 'chat', stream: true, messages: [{ role: 'user', content: 'stream it' }] })) chunks.push(chunk.choices[0]?.delta.content ?? '');
    expect(chunks.join('')).toBe('echo: stream it');
    // A translated request is fitted to its model's output limit from the catalogue, a module the binary carries.
    const translated = await fetch(`http://127.0.0.1:${port}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'unused' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', max_tokens: 32000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(translated.status).toBe(200);
    expect(upstream.calls.at(-1)?.body.max_completion_tokens).toBe(16384);
    // The dashboard ships beside the binary and is served at /.
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toContain('<html');
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(await tryConnect(port)).toBe('refused');
  }, 60_000);
});
