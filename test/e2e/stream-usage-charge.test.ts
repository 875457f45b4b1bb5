import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A stream is charged by the upstream's own count (reasoning tokens included) whether or not the client asked for
 * usage: tollgate asks an OpenAI-format upstream for it, and a client that did not ask gets the stream it would have
 * got without it (no usage chunk, no `usage` key). `priced-model` costs $1 a token.
 */

const USAGE = { prompt_tokens: 5, completion_tokens: 1000, total_tokens: 1005, completion_tokens_details: { reasoning_tokens: 990 } };
let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } } } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function spendOf(keyId: string): Promise<number> {
  return ((await jsonRequest(tg.url, 'GET', `/api/keys/${keyId}`)).body as { spend: number }).spend;
}

describe('a stream without include_usage', () => {
  it("is charged the upstream's count, and the client's stream has no usage in it", async () => {
    const key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'stream-usage' })).body as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.key, maxRetries: 0 });
    for (const asked of [false, true]) {
      upstream.reset();
      upstream.enqueue({ kind: 'usage', usage: USAGE });
      const before = await spendOf(key.id);
      const raw = await fetch(`${tg.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
        body: JSON.stringify({ model: 'openai/priced-model', stream: true, ...(asked ? { stream_options: { include_usage: true } } : {}), messages: [{ role: 'user', content: 'hi there' }] }),
      });
      const text = await raw.text();
      expect(raw.status).toBe(200);
      expect(upstream.calls[0]?.body.stream_options).toEqual({ include_usage: true });
      expect((await spendOf(key.id)) - before).toBeCloseTo(1005, 6);
      const events = text.split('\n\n').filter((frame) => frame.startsWith('data: {')).map((frame) => JSON.parse(frame.slice(6)) as Record<string, unknown>);
      expect(events.length).toBeGreaterThan(1);
      if (asked) {
        expect(events.at(-1)).toMatchObject({ choices: [], usage: USAGE });
        expect(events.slice(0, -1).every((event) => event.usage === null)).toBe(true);
      } else {
        expect(events.every((event) => !('usage' in event))).toBe(true);
        expect(events.every((event) => Array.isArray(event.choices) && (event.choices as unknown[]).length > 0)).toBe(true);
      }
    }
    // The official SDK reads the stream as it would from OpenAI.
    upstream.reset();
    const stream = await client.chat.completions.create({ model: 'openai/priced-model', stream: true, messages: [{ role: 'user', content: 'hi' }] });
    let text = '';
    for await (const chunk of stream) {
      expect(chunk.usage).toBeUndefined();
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text.length).toBeGreaterThan(0);
  });

  it("keeps a client's own stream_options fields and asks the upstream for usage alongside them", async () => {
    upstream.reset();
    const answer = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, stream_options: { include_obfuscation: false }, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await answer.text();
    expect(upstream.calls[0]?.body.stream_options).toEqual({ include_obfuscation: false, include_usage: true });
  });
});
