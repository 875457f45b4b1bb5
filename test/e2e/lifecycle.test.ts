import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const repoRoot = resolve(import.meta.dirname, '../..');
const tsxCli = join(repoRoot, 'node_modules/tsx/dist/cli.mjs');
const mainScript = join(repoRoot, 'src/main.ts');

let upstream: ScriptedUpstream;
const workDirs: string[] = [];


/** Opens a fresh TCP connection (no pooled keep-alive socket) to see whether the port still accepts. */
function tryConnect(port: number): Promise<'connected' | 'refused'> {
  return new Promise((done) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      done('connected');
    });
    socket.once('error', () => done('refused'));
  });
}

interface Started {
  child: ChildProcess;
  url: string;
  port: number;
  cwd: string;
  exit: Promise<number | null>;
  output: () => string;
}

/** Runs `src/main.ts` as `npm start` does, in a fresh working directory, and waits until /health answers. */
async function startMain(env: Record<string, string>): Promise<Started> {
  const cwd = mkdtempSync(join(tmpdir(), 'tollgate-main-'));
  workDirs.push(cwd);
  const port = await freePort();
  const child = spawn(process.execPath, [tsxCli, mainScript], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? cwd, PORT: String(port), HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr?.on('data', (data: Buffer) => (output += data.toString()));
  const exit = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`gateway exited early:\n${output}`);
    try {
      const response = await fetch(`${url}/health`);
      if (response.ok) return { child, url, port, cwd, exit, output: () => output };
    } catch {
      // not listening yet
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`gateway did not become healthy:\n${output}`);
}

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-life', chunkDelayMs: 0 });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of workDirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

describe('npm start', () => {
  it('starts with zero configuration, creates ./data, answers /health', async () => {
    const started = await startMain({});
    try {
      const health = (await (await fetch(`${started.url}/health`)).json()) as { status: string; version: string };
      expect(health.status).toBe('ok');
      expect(existsSync(join(started.cwd, 'data'))).toBe(true);
      expect(started.output()).toContain('listening');
    } finally {
      started.child.kill('SIGTERM');
      expect(await started.exit).toBe(0);
    }
  }, 40_000);

  it('on SIGTERM refuses new connections, finishes the in-flight stream, then exits 0', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-data-'));
    workDirs.push(dataDir);
    const started = await startMain({ OPENAI_API_KEY: 'sk-life', OPENAI_BASE_URL: `${upstream.url}/v1`, TOLLGATE_DATA_DIR: dataDir });
    expect(existsSync(dataDir)).toBe(true);
    const client = new OpenAI({ baseURL: `${started.url}/v1`, apiKey: 'x', maxRetries: 0 });
    upstream.enqueue({ kind: 'slow-chunks', delayMs: 150 });
    const stream = await client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'one two three four five six' }],
      stream: true,
    });
    let text = '';
    let signalled = false;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (!signalled) {
        signalled = true;
        started.child.kill('SIGTERM');
        await new Promise((done) => setTimeout(done, 100));
        // New connections are no longer accepted while the stream drains.
        expect(await tryConnect(started.port)).toBe('refused');
      }
    }
    expect(text).toBe('echo: one two three four five six');
    const streamEnded = Date.now();
    expect(await started.exit).toBe(0);
    // Exits once the work is done, without waiting for the client's idle keep-alive socket to time out.
    expect(Date.now() - streamEnded).toBeLessThan(2000);
  }, 40_000);

  it('bounds the drain by the grace period and still exits 0', async () => {
    const started = await startMain({
      OPENAI_API_KEY: 'sk-life',
      OPENAI_BASE_URL: `${upstream.url}/v1`,
      TOLLGATE_SHUTDOWN_GRACE_MS: '500',
    });
    const client = new OpenAI({ baseURL: `${started.url}/v1`, apiKey: 'x', maxRetries: 0 });
    upstream.enqueue({ kind: 'stall-after', chunks: 1 });
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a b c' }], stream: true });
    const sentAt = Date.now();
    started.child.kill('SIGTERM');
    const consume = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(consume()).rejects.toThrow();
    expect(await started.exit).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(5000);
  }, 40_000);

  it('refuses to start with a broken config file and says why', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-badcfg-'));
    workDirs.push(cwd);
    const child = spawn(process.execPath, [tsxCli, mainScript], {
      cwd,
      env: { PATH: process.env.PATH ?? '', TOLLGATE_CONFIG: join(cwd, 'missing.yaml') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    const code = await new Promise<number | null>((done) => child.on('exit', done));
    expect(code).toBe(1);
    expect(stderr).toContain('configuration error');
    expect(stderr).toContain('missing.yaml');
  }, 30_000);
});
