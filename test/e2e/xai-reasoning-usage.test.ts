import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * xAI counts a Grok model's reasoning outside completion_tokens: "reasoning token consumption will be counted
 * separately from completion_tokens, but will be counted in the total_tokens" (docs.x.ai, consumption and rate
 * limits), so total_tokens = prompt + completion + reasoning, and the reasoning is billed at the output rate. The
 * usage below is a real answer's shape (prompt 10120 with 128 cached, completion 1499, reasoning 2809, total 14428).
 * `priced-grok` costs $1 an output token and nothing for input.
 */

const XAI_USAGE = {
  prompt_tokens: 10120,
  completion_tokens: 1499,
  total_tokens: 14428,
  prompt_tokens_details: { text_tokens: 10120, audio_tokens: 0, image_tokens: 0, cached_tokens: 128 },
  completion_tokens_details: { reasoning_tokens: 2809, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
  num_sources_used: 0,
};

let xai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  xai = await startOpenAIUpstream({ apiKey: 'xai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { xai: { base_url: `${xai.url}/v1`, api_key: 'xai-upstream', prices: { 'priced-grok': { input_per_mtok: 0, output_per_mtok: 1_000_000 } } } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await xai?.close();
});
beforeEach(() => xai.reset());

async function spendOf(keyId: string): Promise<number> {
  return ((await jsonRequest(tg.url, 'GET', `/api/keys/${keyId}`)).body as { spend: number }).spend;
}

describe("a Grok model's reasoning tokens", () => {
  it('are charged at the output rate with the completion, whole and streamed', async () => {
    const key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'xai-reasoning' })).body as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.key, maxRetries: 0 });
    for (const stream of [false, true]) {
      xai.reset();
      xai.enqueue({ kind: 'usage', usage: XAI_USAGE });
      const before = await spendOf(key.id);
      if (stream) {
        const chunks = await client.chat.completions.create({ model: 'xai/priced-grok', stream: true, messages: [{ role: 'user', content: 'think hard' }] });
        for await (const _chunk of chunks) void _chunk;
      } else {
        const completion = await client.chat.completions.create({ model: 'xai/priced-grok', messages: [{ role: 'user', content: 'think hard' }] });
        // The OpenAI client is shown xAI's usage as xAI wrote it.
        expect(completion.usage).toMatchObject({ completion_tokens: 1499, total_tokens: 14428 });
      }
      expect((await spendOf(key.id)) - before).toBeCloseTo(1499 + 2809, 6);
    }
  });

  it("count in an Anthropic client's output_tokens", async () => {
    xai.enqueue({ kind: 'usage', usage: XAI_USAGE });
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: 'xai/priced-grok', max_tokens: 8000, messages: [{ role: 'user', content: 'think hard' }] });
    expect(message.usage).toMatchObject({ input_tokens: 10120 - 128, cache_read_input_tokens: 128, output_tokens: 1499 + 2809 });
  });

  it("count as thoughts beside the candidates' tokens for a Gemini client", async () => {
    xai.enqueue({ kind: 'usage', usage: XAI_USAGE });
    const response = await fetch(`${tg.url}/genai/v1beta/models/${encodeURIComponent('xai/priced-grok')}:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'think hard' }] }] }),
    });
    const body = (await response.json()) as { usageMetadata: Record<string, number> };
    expect(body.usageMetadata).toMatchObject({ promptTokenCount: 10120, candidatesTokenCount: 1499, thoughtsTokenCount: 2809, totalTokenCount: 14428, cachedContentTokenCount: 128 });
  });
});
