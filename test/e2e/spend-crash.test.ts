import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { spawnMain, waitUntilGone } from '../helpers/main-process.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
const dirs: string[] = [];

beforeAll(async () => {
  // Every answer streams over ~250 ms, so at any moment requests are waiting on the upstream, not committing.
  upstream = await startOpenAIUpstream({ apiKey: null, chunkDelayMs: 25, record: false });
});
afterAll(async () => {
  await upstream.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('spend survives kill -9', () => {
  it('after a crash mid-load and a restart, every answer a client saw is charged, and nothing beyond the requests in flight', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'tollgate-crash-'));
    dirs.push(cwd);
    writeFileSync(
      join(cwd, 'tollgate.config.yaml'),
      [
        'providers:',
        '  openai:',
        `    base_url: ${upstream.url}/v1`,
        '    api_key: sk-any',
        '    prices:',
        // $1 per output token: "echo: hi" costs $2.
        '      priced-model: { input_per_mtok: 0, output_per_mtok: 1000000 }',
        '',
      ].join('\n'),
    );
    const first = await spawnMain({ cwd, env: { LOG_LEVEL: 'warn' } });
    // The process spawned is the server itself (no wrapper in between), so the kill below reaches it.
    expect(first.serverPid).toBe(first.child.pid);
    const created = await fetch(`${first.url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'crash', budget: null, rate_limit: null, models: [] }),
    });
    const { id, key } = (await created.json()) as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: key, maxRetries: 0 });

    let succeeded = 0;
    let started = 0;
    let ended = 0;
    let stop = false;
    const worker = async (): Promise<void> => {
      while (!stop) {
        started++;
        try {
          const stream = await client.chat.completions.create({
            model: 'openai/priced-model',
            messages: [{ role: 'user', content: 'hi' }],
            stream: true,
            stream_options: { include_usage: true },
          });
          let text = '';
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
          if (text === 'echo: hi') succeeded++;
          ended++;
        } catch {
          return;
        }
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    await new Promise((done) => setTimeout(done, 1500));
    first.child.kill('SIGKILL');
    // Requests begun and not yet ended at the kill: each may have been charged (the spend commits as the answer's
    // last bytes go out) without its client reading those bytes. No other request can have been.
    const inFlight = started - ended;
    stop = true;
    await Promise.all(workers);
    expect((await first.exit).signal).toBe('SIGKILL');
    // Proof the crash happened: the first server is gone and its port answers nothing before the restart.
    expect(await waitUntilGone(first.serverPid, first.port, 5000)).toEqual({ port: 'refused', alive: false });
    expect(succeeded).toBeGreaterThan(10);

    const second = await spawnMain({ cwd, port: first.port, env: { LOG_LEVEL: 'warn' } });
    expect(second.serverPid).not.toBe(first.serverPid);
    try {
      const record = (await (await fetch(`${second.url}/api/keys/${id}`)).json()) as { spend: number; requests: number };
      // Every answer a client saw end is charged (none lost), each exactly once, and only requests then in flight beyond them.
      expect(record.spend).toBe(2 * record.requests);
      expect(record.requests).toBeGreaterThanOrEqual(succeeded);
      expect(record.requests).toBeLessThanOrEqual(succeeded + inFlight);
      expect(inFlight).toBeLessThanOrEqual(8);
    } finally {
      second.child.kill('SIGTERM');
      expect((await second.exit).code).toBe(0);
    }
  }, 60_000);
});
