import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

let upstream: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { gemini: { base_url: `${upstream.url}/v1beta`, api_key: 'gemini-test-key' } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<OpenAI.ChatCompletionChunk[]> {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

describe('gemini: n > 1 streamed', () => {
  it('streams every candidate as its own choice, like the whole answer', async () => {
    const request = { model: 'gemini/gemini-2.5-flash', messages: [{ role: 'user' as const, content: 'two takes' }], n: 2 };
    const whole = await tg.client.chat.completions.create(request);
    expect(whole.choices.map((choice) => choice.index)).toEqual([0, 1]);

    const chunks = await collect(await tg.client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } }));
    expect(upstream.calls.at(-1)?.body.generationConfig.candidateCount).toBe(2);
    const text = (index: number): string => chunks.flatMap((chunk) => chunk.choices.filter((c) => c.index === index).map((c) => c.delta.content ?? '')).join('');
    const finish = (index: number): Array<string | null> => chunks.flatMap((chunk) => chunk.choices.filter((c) => c.index === index && c.finish_reason !== null).map((c) => c.finish_reason));
    for (const index of [0, 1]) {
      expect(text(index)).toBe(whole.choices[index]?.message.content);
      expect(finish(index)).toEqual(['stop']);
    }
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(whole.usage?.completion_tokens);
  });
});
