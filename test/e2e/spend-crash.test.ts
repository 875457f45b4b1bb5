import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const repoRoot = resolve(import.meta.dirname, '../..');
const tsxCli = join(repoRoot, 'node_modules/tsx/dist/cli.mjs');
const mainScript = join(repoRoot, 'src/main.ts');

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

async function startMain(cwd: string, port: number): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, [tsxCli, mainScript], {
    cwd,
    env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', TOLLGATE_DATA_DIR: join(cwd, 'data'), LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise((done) => child.once('exit', done));
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error('gateway exited early');
    const ok = await fetch(`${url}/health`).then((r) => r.ok, () => false);
    if (ok) return { child, url, exited };
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error('gateway did not start');
}

describe('spend survives kill -9', () => {
  it('after a crash mid-load and a restart, recorded spend equals the cost of the requests clients saw succeed', async () => {
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
    const port = await freePort();
    const first = await startMain(cwd, port);
    const created = await fetch(`${first.url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'crash', budget: null, rate_limit: null, models: [] }),
    });
    const { id, key } = (await created.json()) as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: key, maxRetries: 0 });

    let succeeded = 0;
    let stop = false;
    const worker = async (): Promise<void> => {
      while (!stop) {
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
        } catch {
          return;
        }
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    await new Promise((done) => setTimeout(done, 1500));
    first.child.kill('SIGKILL');
    stop = true;
    await Promise.all(workers);
    await first.exited;
    expect(succeeded).toBeGreaterThan(10);

    const second = await startMain(cwd, port);
    try {
      const record = (await (await fetch(`${second.url}/api/keys/${id}`)).json()) as { spend: number; requests: number };
      expect(record.spend).toBe(2 * succeeded);
      expect(record.requests).toBe(succeeded);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  }, 60_000);
});
