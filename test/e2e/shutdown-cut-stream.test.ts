import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnMain, waitUntilGone, type MainProcess } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
const dirs: string[] = [];
const started: MainProcess[] = [];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: null, chunkDelayMs: 0 });
});
afterAll(async () => {
  for (const gateway of started) if (gateway.child.exitCode === null && gateway.child.signalCode === null) gateway.child.kill('SIGKILL');
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('a stream cut by a graceful shutdown past its grace period', () => {
  it('is logged as ended by the gateway (503 shutting_down, cancelled), not as a client that left (499)', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-shutdown-cut-'));
    dirs.push(cwd);
    writeFileSync(
      join(cwd, 'tollgate.config.yaml'),
      ['settings:', '  shutdown_grace_ms: 300', 'providers:', '  openai:', `    base_url: ${upstream.url}/v1`, '    api_key: sk-any', ''].join('\n'),
    );
    const first = await spawnMain({ cwd, env: { LOG_LEVEL: 'warn' } });
    started.push(first);
    const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    // The upstream sends its opening chunk and the first words, then nothing: the stream is still open when the
    // gateway is told to stop.
    upstream.enqueue({ kind: 'stall-after', chunks: 2 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'one two three' }], stream: true })
      .withResponse();
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    const iterator = stream[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    const reading = (async () => {
      for (;;) if ((await iterator.next()).done) return;
    })().then(
      () => 'ended',
      () => 'cut',
    );

    process.kill(first.serverPid, 'SIGTERM');
    // The client sees its stream cut once the grace period is over.
    expect(await reading).toBe('cut');
    const gone = await waitUntilGone(first.serverPid, first.port, 10_000);
    expect(gone).toEqual({ port: 'refused', alive: false });
    expect(first.output()).toContain('shutdown grace period over');

    const second = await spawnMain({ cwd, env: { LOG_LEVEL: 'warn' } });
    started.push(second);
    try {
      const res = await fetch(`${second.url}/api/logs/${requestId}`);
      expect(res.status).toBe(200);
      const entry = (await res.json()) as Record<string, unknown>;
      expect(entry).toMatchObject({
        id: requestId,
        status: 503,
        stream: true,
        cancelled: true,
        error_type: 'service_unavailable',
        error_code: 'shutting_down',
      });
      expect(String(entry.error_message)).toMatch(/grace period/);
      const other = await fetch(`${second.url}/api/logs?status=499`).then((r) => r.json() as Promise<{ data?: unknown[]; entries?: unknown[] }>);
      expect(JSON.stringify(other)).not.toContain(String(requestId));
    } finally {
      second.child.kill('SIGTERM');
      await second.exit;
    }
  }, 60_000);
});
