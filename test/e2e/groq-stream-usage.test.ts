import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Groq reports a stream's usage only in the final chunk's `x_groq.usage` (its chunks have no `usage` field, and
 * `stream_options` is unused by its API): tollgate charges that count. `priced-model` costs $1 a token.
 */

const USAGE = { prompt_tokens: 7, completion_tokens: 1000, total_tokens: 1007, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } };
let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'gsk-upstream', streamFlavor: 'groq' });
  tg = await startGateway({
    providers: { groq: { type: 'groq', base_url: `${upstream.url}/v1`, api_key: 'gsk-upstream', prices: { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } } } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function spendOf(keyId: string): Promise<number> {
  return ((await jsonRequest(tg.url, 'GET', `/api/keys/${keyId}`)).body as { spend: number }).spend;
}

describe('a Groq stream', () => {
  it("is charged Groq's own count from x_groq.usage, asked for usage or not", async () => {
    const key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'groq-stream-usage' })).body as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.key, maxRetries: 0 });
    for (const asked of [false, true]) {
      upstream.reset();
      upstream.enqueue({ kind: 'usage', usage: USAGE });
      const before = await spendOf(key.id);
      const stream = await client.chat.completions.create({
        model: 'groq/priced-model',
        stream: true,
        ...(asked ? { stream_options: { include_usage: true } } : {}),
        messages: [{ role: 'user', content: 'hi there' }],
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
      expect(text.length).toBeGreaterThan(0);
      expect(upstream.calls[0]?.path).toBe('/v1/chat/completions');
      expect((await spendOf(key.id)) - before).toBeCloseTo(1007, 6);
    }
  });
});
