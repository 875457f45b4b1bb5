import Anthropic from '@anthropic-ai/sdk';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A stream whose head Node refuses (a plugin's header value with a CR/LF or a character above U+00FF) fails alone,
 * with its dialect's 500, also when the upstream is silent long enough for a keep-alive to open the stream: that
 * keep-alive writes the head from a timer, outside every guard of the answer, where a throw ended the process. The
 * plugin sets its header from a timer of its own after calling next(): one set before is found there, and the request
 * fails with plugin_failed before any keep-alive (plugin-audit-bad-header); this one only the keep-alive meets first.
 */

const BAD_HEADER = `export default { name: 'bad-header', create: () => ({ name: 'bad-header', run(ctx, next) { setTimeout(() => { ctx.responseHeaders['x-note'] = 'a\\r\\nb'; }, 0); return next(); } }) };\n`;

let upstream: ScriptedUpstream;
let dir: string;
let tg: RunningGateway;
const uncaught: unknown[] = [];
const onUncaught = (err: unknown): void => {
  uncaught.push(err);
};

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  dir = mkdtempSync(join(tmpdir(), 'tollgate-keepalive-fault-'));
  mkdirSync(join(dir, 'plugins'));
  writeFileSync(join(dir, 'plugins', 'bad-header.mjs'), BAD_HEADER);
  tg = await startGateway(
    {
      settings: { stream_keepalive_ms: 50 },
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-up' } },
      plugins: [{ name: 'bad-header', path: 'plugins/bad-header.mjs' }],
    },
    {},
    { configPath: join(dir, 'tollgate.yaml') },
  );
});
afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await tg?.stop();
  await upstream?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a stream whose head Node refuses, opened by a keep-alive', () => {
  it('is the OpenAI client’s 500 plugin_failed, and the process lives on', async () => {
    uncaught.length = 0;
    upstream.enqueue({ kind: 'silent-start', delayMs: 300 });
    const client = new OpenAI({ apiKey: 'none', baseURL: `${tg.url}/v1`, maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(OpenAI.InternalServerError);
    // The plugin's answer (the upstream's first chunk) passes its isolation, which finds the header it set.
    expect((error as InstanceType<typeof OpenAI.InternalServerError>).code).toBe('plugin_failed');
    expect(uncaught).toEqual([]);
  });

  it('is the Anthropic client’s 500 api_error, and the process lives on', async () => {
    uncaught.length = 0;
    upstream.enqueue({ kind: 'silent-start', delayMs: 300 });
    const client = new Anthropic({ apiKey: 'none', baseURL: `${tg.url}/anthropic`, maxRetries: 0 });
    const error = await client.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'hi' }] }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(Anthropic.InternalServerError);
    expect(uncaught).toEqual([]);
    // Other requests are served as ever.
    const fine = await new OpenAI({ apiKey: 'none', baseURL: `${tg.url}/v1`, maxRetries: 0 }).models.list();
    expect(fine.data.length).toBeGreaterThan(0);
  });
});
