import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { spawnMain, waitUntilGone, type MainProcess } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
const dirs: string[] = [];

/**
 * Injected into the real server process: on SIGUSR2 it keeps the gateway's own LMDB write thread busy with
 * asynchronous transactions (as usage rollups, cache entries and every commit with TOLLGATE_FSYNC=true keep it under
 * load), each of which waits on that thread for the main thread to run its callback. The store is the root database
 * that announces a transaction first ('begin-transaction'), so the writes go through the environment the gateway
 * opened. Like the gateway's own writers they stop once that store starts closing.
 */
const BUSY_STORE = `
import { EventEmitter } from 'node:events';
const emit = EventEmitter.prototype.emit;
let root = null;
EventEmitter.prototype.emit = function (event, ...args) {
  if (event === 'begin-transaction' && root === null && this.isRoot === true) root = this;
  return emit.call(this, event, ...args);
};
process.on('SIGUSR2', () => {
  const side = root.openDB({ name: 'audit-busy' });
  let n = 0;
  const again = () => {
    if (root.status === 'open') side.transaction(() => side.put('n', n++)).then(again, () => undefined);
  };
  for (let i = 0; i < 4; i++) again();
});
`;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null, chunkDelayMs: 0, record: false });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('a second signal while draining', () => {
  it('exits at once with 128+signal even while the store is writing, and a restart on the same data finds every answered spend', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-2sig-'));
    dirs.push(cwd);
    const fault = join(cwd, 'busy-store.mjs');
    writeFileSync(fault, BUSY_STORE);
    writeFileSync(
      join(cwd, 'tollgate.config.yaml'),
      ['providers:', '  openai:', `    base_url: ${upstream.url}/v1`, '    api_key: sk-any', '    prices:', '      priced-model: { input_per_mtok: 0, output_per_mtok: 1000000 }', ''].join('\n'),
    );
    const env = { LOG_LEVEL: 'warn', TOLLGATE_SHUTDOWN_GRACE_MS: '60000' };
    let server: MainProcess = await spawnMain({ cwd, env, imports: [pathToFileURL(fault).href] });
    const created = await fetch(`${server.url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'second-signal', budget: null }) });
    const { id, key } = (await created.json()) as { id: string; key: string };
    let answered = 0;
    for (let round = 0; round < 3; round++) {
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0, timeout: 20_000 });
      // Keyed answers: each one's spend is committed before its client reads the end of it.
      await Promise.all(
        Array.from({ length: 4 }, async () => {
          for (let i = 0; i < 5; i++) {
            const answer = await client.chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }] });
            if (answer.choices[0]?.message.content === 'echo: hi') answered++;
          }
        }),
      );
      // A stream that stalls holds the drain open, so the second signal finds the gateway still draining.
      upstream.enqueue({ kind: 'stall-after', chunks: 1 });
      const stalled = await client.chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], stream: true });
      const cut = (async () => {
        for await (const _chunk of stalled) void _chunk;
      })().catch(() => undefined);
      process.kill(server.serverPid, 'SIGUSR2');
      await new Promise((done) => setTimeout(done, 300));
      server.child.kill('SIGTERM');
      // Later than a repeated delivery of the first signal (1 s): the operator asking to stop now.
      await new Promise((done) => setTimeout(done, 1_300));
      expect(server.child.exitCode).toBeNull();
      const secondAt = Date.now();
      server.child.kill('SIGINT');
      const exited = await Promise.race([server.exit, new Promise<'hung'>((done) => setTimeout(() => done('hung'), 10_000))]);
      if (exited === 'hung') server.child.kill('SIGKILL');
      expect(exited, server.output().slice(-3000)).toEqual({ code: 130, signal: null });
      expect(Date.now() - secondAt).toBeLessThan(5_000);
      await cut;
      // The first process is gone and its port closed before the next one opens the same data directory.
      expect(await waitUntilGone(server.serverPid, server.port, 5_000)).toEqual({ port: 'refused', alive: false });
      const previous = server;
      server = await spawnMain({ cwd, port: previous.port, env, imports: [pathToFileURL(fault).href] });
      expect(server.serverPid).not.toBe(previous.serverPid);
      const record = (await (await fetch(`${server.url}/api/keys/${id}`)).json()) as { spend: number; requests: number };
      // Every answer a client read is charged; the stalled stream, cut by the exit, may be or not.
      expect(record.requests).toBeGreaterThanOrEqual(answered);
      expect(record.requests).toBeLessThanOrEqual(answered + round + 1);
      expect(record.spend).toBe(2 * record.requests);
    }
    server.child.kill('SIGTERM');
    expect((await server.exit).code).toBe(0);
  }, 180_000);
});
