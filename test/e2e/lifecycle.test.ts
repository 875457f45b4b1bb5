import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { freePort } from '../helpers/net.js';
import { childEnv, repoRoot, spawnMain, tryConnect, waitUntilGone, type MainProcess, type SpawnOptions } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
const workDirs: string[] = [];

interface Started extends MainProcess {
  cwd: string;
}

/** Runs `src/main.ts` as `npm start` does (node with tsx's loader, no wrapper), in a fresh working directory. */
async function startMain(env: Record<string, string>, options: Partial<SpawnOptions> = {}): Promise<Started> {
  const cwd = mkdtempSync(join(tmpdir(), 'tollgate-main-'));
  workDirs.push(cwd);
  const started = await spawnMain({ cwd, env: { TOLLGATE_DATA_DIR: join(cwd, 'data'), ...env }, ...options });
  return { ...started, cwd };
}

/** The exit code, once the process is gone. */
async function exitCode(started: MainProcess): Promise<number | null> {
  return (await started.exit).code;
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
      // The access mode, in one line: zero config serves this machine only.
      const access = started.output().split('\n').filter((line) => line.includes('"msg":"access: '));
      expect(access).toHaveLength(1);
      expect(access[0]).toContain('served to clients on this machine only');
    } finally {
      started.child.kill('SIGTERM');
      expect(await exitCode(started)).toBe(0);
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
    expect(await exitCode(started)).toBe(0);
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
    expect(await exitCode(started)).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(5000);
  }, 40_000);

  it('exits at once on a second signal a moment after the first, without waiting for the stream in flight', async () => {
    const started = await startMain({ OPENAI_API_KEY: 'sk-life', OPENAI_BASE_URL: `${upstream.url}/v1`, TOLLGATE_SHUTDOWN_GRACE_MS: '60000' });
    const client = new OpenAI({ baseURL: `${started.url}/v1`, apiKey: 'x', maxRetries: 0 });
    upstream.enqueue({ kind: 'stall-after', chunks: 1 });
    const stream = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a b c' }], stream: true });
    const consumed = (async () => {
      for await (const _chunk of stream) void _chunk;
    })().then(
      () => 'ended',
      (err: unknown) => err,
    );
    started.child.kill('SIGINT');
    // The same signal delivered twice at once (npm passes Ctrl-C on to the server) is one request to drain.
    started.child.kill('SIGINT');
    await new Promise((done) => setTimeout(done, 1_500));
    expect(started.child.exitCode).toBeNull(); // still draining the stalled stream (grace 60 s)
    const secondAt = Date.now();
    started.child.kill('SIGINT');
    expect(await exitCode(started)).toBe(130);
    expect(Date.now() - secondAt).toBeLessThan(3_000);
    expect(await waitUntilGone(started.child.pid ?? 0, started.port, 5000)).toEqual({ port: 'refused', alive: false });
    expect(started.output()).toContain('second signal: exiting now');
    // The stream was cut, not finished.
    expect(await consumed).toBeInstanceOf(Error);
  }, 40_000);

  it('applies a settings.log_level change without a restart', async () => {
    const started = await startMain({});
    try {
      // No provider key: a 401 the gateway logs at debug (a client mistake).
      const failing = () =>
        fetch(`${started.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
        });
      const debugLines = () => started.output().split('\n').filter((line) => line.startsWith('{"level":20,'));
      expect((await failing()).status).toBe(401);
      const patch = (logLevel: string) =>
        fetch(`${started.url}/api/config`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ settings: { log_level: logLevel } }) });
      expect((await patch('debug')).status).toBe(200);
      expect((await failing()).status).toBe(401);
      const deadline = Date.now() + 5000;
      while (debugLines().length === 0 && Date.now() < deadline) await new Promise((done) => setTimeout(done, 50));
      // Only the request after the change was logged at debug.
      expect(debugLines()).toHaveLength(1);
      expect(debugLines()[0]).toContain('"code":"provider_key_missing"');
    } finally {
      started.child.kill('SIGTERM');
      expect(await exitCode(started)).toBe(0);
    }
  }, 40_000);

  it('refuses to start with a broken config file and says why', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-badcfg-'));
    workDirs.push(cwd);
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src/main.ts')], {
      cwd: repoRoot,
      env: childEnv({ TOLLGATE_CONFIG: join(cwd, 'missing.yaml'), TOLLGATE_DATA_DIR: join(cwd, 'data') }, cwd),
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

describe('signals reach the server through npm start', () => {
  // `npm start` is what `CMD ["npm","start"]`, a systemd unit or a terminal runs; each delivers SIGTERM differently.
  const cases: Array<{ name: string; send: (started: MainProcess) => void }> = [
    { name: 'SIGTERM to the npm process', send: (started) => started.child.kill('SIGTERM') },
    { name: "SIGTERM to npm's process group", send: (started) => process.kill(-(started.child.pid ?? 0), 'SIGTERM') },
    { name: 'SIGTERM to the server process itself', send: (started) => process.kill(started.serverPid, 'SIGTERM') },
  ];
  for (const { name, send } of cases) {
    it(`${name}: drains, the server exits and npm exits 0`, async () => {
      const started = await startMain({}, { via: 'npm', detached: true });
      try {
        // npm runs the server as its own child (no wrapper in between that could swallow the signal).
        expect(started.serverPid).not.toBe(started.child.pid);
        send(started);
        expect(await exitCode(started)).toBe(0);
        expect(await waitUntilGone(started.serverPid, started.port, 5000)).toEqual({ port: 'refused', alive: false });
        expect(started.output()).toContain('shutdown complete');
      } finally {
        if (started.child.pid) {
          try {
            process.kill(-started.child.pid, 'SIGKILL');
          } catch {
            // the group is gone, as it should be
          }
        }
      }
    }, 40_000);
  }
});

/** Runs src/main.ts (with `args`) in a fresh directory with `env` (on a free port), for a start or command that is expected to fail. */
async function failedStart(env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; stderr: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'tollgate-nostart-'));
  workDirs.push(cwd);
  const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src/main.ts'), ...args], {
    cwd: repoRoot,
    env: childEnv({ PORT: String(await freePort()), HOST: '127.0.0.1', TOLLGATE_DATA_DIR: join(cwd, 'data'), ...env }, cwd),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  return { code, stderr };
}

describe('start-up and fatal errors', () => {
  it('a port already in use is one line naming PORT, exit 1, no stack', async () => {
    const first = await startMain({});
    try {
      const cwd = mkdtempSync(join(tmpdir(), 'tollgate-port-'));
      workDirs.push(cwd);
      const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src/main.ts')], {
        cwd: repoRoot,
        env: childEnv({ PORT: String(first.port), HOST: '127.0.0.1', TOLLGATE_DATA_DIR: join(cwd, 'data') }, cwd),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
      const code = await new Promise<number | null>((done) => child.on('exit', done));
      expect(code).toBe(1);
      expect(stderr.trim().split('\n')).toEqual([`tollgate: port ${first.port} on 127.0.0.1 is already in use; set PORT to another port (e.g. PORT=${first.port + 1} npm start)`]);
      // The first server is untouched.
      expect((await fetch(`${first.url}/health`)).ok).toBe(true);
    } finally {
      first.child.kill('SIGTERM');
      expect(await exitCode(first)).toBe(0);
    }
  }, 40_000);

  it('a bad LOG_LEVEL is one line naming it, exit 1, no stack', async () => {
    const { code, stderr } = await failedStart({ LOG_LEVEL: 'bogus' });
    expect(code).toBe(1);
    expect(stderr.trim().split('\n')).toEqual(['tollgate: configuration error: LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "bogus"']);
  }, 30_000);

  it('a config path that is a directory is one line naming it, at start and from check-config, exit 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-cfgdir-'));
    workDirs.push(dir);
    const start = await failedStart({ TOLLGATE_CONFIG: dir });
    expect(start.code).toBe(1);
    expect(start.stderr.trim().split('\n')).toEqual([`tollgate: configuration error: ${dir}: cannot read the config file: it is a directory, not a file`]);
    const check = await failedStart({}, ['check-config', dir]);
    expect(check.code).toBe(1);
    expect(check.stderr.trim().split('\n')).toEqual([`error: ${dir}: cannot read the config file: it is a directory, not a file`]);
  }, 30_000);

  it('a data directory that cannot be used is one line naming it and the setting, exit 1, no stack', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-datafile-'));
    workDirs.push(dir);
    const file = join(dir, 'data');
    writeFileSync(file, 'not a directory');
    const asFile = await failedStart({ TOLLGATE_DATA_DIR: file });
    expect(asFile.code).toBe(1);
    expect(asFile.stderr.trim().split('\n')).toEqual([
      `tollgate: configuration error: cannot use the data directory ${file}: it is a file, not a directory; set TOLLGATE_DATA_DIR (or settings.data_dir) to a directory tollgate can write`,
    ]);
    const under = await failedStart({ TOLLGATE_DATA_DIR: join(file, 'sub') });
    expect(under.code).toBe(1);
    expect(under.stderr.trim().split('\n')).toEqual([
      `tollgate: configuration error: cannot use the data directory ${join(file, 'sub')}: a part of its path is a file, not a directory; set TOLLGATE_DATA_DIR (or settings.data_dir) to a directory tollgate can write`,
    ]);
  }, 30_000);

  it('an uncaught error while spend is being committed under load ends the process at once, every time', async () => {
    const faultDir = mkdtempSync(join(tmpdir(), 'tollgate-fault-'));
    workDirs.push(faultDir);
    // A fault injected into the real server process on cue: an error thrown outside any request, which nothing catches.
    const fault = join(faultDir, 'fault.mjs');
    writeFileSync(fault, "process.on('SIGUSR2', () => setImmediate(() => { throw new Error('injected fault'); }));\n");
    for (let round = 0; round < 3; round++) {
      const started = await startMain(
        { OPENAI_API_KEY: 'sk-life', OPENAI_BASE_URL: `${upstream.url}/v1` },
        { imports: [pathToFileURL(fault).href] },
      );
      const created = await fetch(`${started.url}/api/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `fault-${round}`, budget: 1000 }),
      });
      const { key } = (await created.json()) as { key: string };
      const client = new OpenAI({ baseURL: `${started.url}/v1`, apiKey: key, maxRetries: 0, timeout: 10_000 });
      let running = true;
      // Keyed requests: every answer commits spend and a log entry, so the fault lands among commits.
      const load = Array.from({ length: 6 }, async () => {
        while (running) {
          await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }).catch(() => (running = false));
        }
      });
      await new Promise((done) => setTimeout(done, 400 + round * 150));
      process.kill(started.serverPid, 'SIGUSR2');
      const { code, signal } = await Promise.race([
        started.exit,
        new Promise<{ code: null; signal: 'timeout' }>((done) => setTimeout(() => done({ code: null, signal: 'timeout' }), 10_000)),
      ]);
      running = false;
      await Promise.all(load);
      if (signal === 'timeout') started.child.kill('SIGKILL');
      // Ended by itself (it kills itself so LMDB's exit hooks cannot deadlock it), not by the test.
      expect({ code, signal }).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await waitUntilGone(started.serverPid, started.port, 3000)).toEqual({ port: 'refused', alive: false });
      expect(started.output()).toContain('fatal: uncaught exception');
      expect(started.output()).toContain('injected fault');
    }
  }, 90_000);
});
