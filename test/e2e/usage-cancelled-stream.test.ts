import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A stream its client leaves after the answer began was answered by the upstream's model and is charged for what
 * it generated: /api/usage counts it, and its spend, under that model, as the request log and the metrics do.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: { 'priced-model': { input_per_mtok: 1_000, output_per_mtok: 2_000 } } } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

describe('a stream the client leaves mid-answer', () => {
  it('counts in /api/usage under the model that answered, with the spend the log and the key show', async () => {
    const key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'leaver', budget: 100 })).body as { id: string; key: string };
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.key, maxRetries: 0 });
    upstream.enqueue({ kind: 'slow-chunks', delayMs: 300 });
    const controller = new AbortController();
    const { data: stream, request_id: requestId } = await client.chat.completions
      .create({ model: 'openai/priced-model', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'count to ten slowly' }] }, { signal: controller.signal })
      .withResponse();
    let chunks = 0;
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) chunks++;
      if (chunks === 1) {
        controller.abort();
        break;
      }
    }
    expect(chunks).toBe(1);

    let entry: { status: number; cancelled: boolean; cost_usd: number; provider: string } | undefined;
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline && !entry) {
      const found = await jsonRequest(tg.url, 'GET', `/api/logs/${requestId}`);
      if (found.status === 200) entry = found.body;
      else await new Promise((done) => setTimeout(done, 50));
    }
    expect(entry).toMatchObject({ status: 499, cancelled: true, provider: 'openai' });
    expect(entry?.cost_usd).toBeGreaterThan(0);
    const spend = ((await jsonRequest(tg.url, 'GET', `/api/keys/${key.id}`)).body as { spend: number }).spend;
    expect(spend).toBeCloseTo(entry?.cost_usd ?? NaN, 9);

    const usage = (await jsonRequest(tg.url, 'GET', '/api/usage?group_by=model&interval=day')).body as { totals: Array<{ group: string; requests: number; spend_usd: number }> };
    expect(usage.totals).toEqual([expect.objectContaining({ group: 'openai/priced-model', requests: 1, spend_usd: expect.closeTo(spend, 9) })]);
  });
});
