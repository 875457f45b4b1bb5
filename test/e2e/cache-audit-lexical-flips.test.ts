import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * The semantic tier with the real default embedder (use-lite) and threshold: questions that differ only in tense or
 * in quantity embed at 0.87 to 0.98, above the threshold, with the same content words, and want other answers.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const stored = new Set<string>();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on' } }));
  tg.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
  const { api } = gatewayApi(() => tg.url);
  for (let i = 0; i < 400; i++) {
    const report = (await api('GET', '/api/cache')).body;
    if (report.semantic_index.state === 'ready' && report.embedder.state === 'ready') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the semantic tier did not become ready');
}, 60_000);
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

async function ask(question: string): Promise<{ text: string | null; cache: string | null; similarity: string | null }> {
  const { data, response } = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] }).withResponse();
  const id = response.headers.get('x-request-id') ?? '';
  const cache = response.headers.get('x-tollgate-cache');
  // A miss is stored after the client got it: wait, so the next question can find it.
  if (cache === 'miss') for (let i = 0; i < 100 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  if (cache === 'miss') expect(stored.has(id)).toBe(true);
  return { text: data.choices[0]?.message.content ?? null, cache, similarity: response.headers.get('x-tollgate-cache-similarity') };
}

describe('the semantic tier, questions that differ in tense or quantity', () => {
  it('still answers a true paraphrase (the tier is on)', async () => {
    expect((await ask('What is the capital of France?')).cache).toBe('miss');
    expect(await ask("Tell me France's capital city")).toMatchObject({ cache: 'hit-semantic', text: 'echo: What is the capital of France?' });
  });

  it.each([
    ['Who is the president of France?', 'Who was the president of France?'],
    ['Was Einstein married?', 'Is Einstein married?'],
    ['Did it rain today in Paris?', 'Will it rain today in Paris?'],
    ['How do I delete all files in a git repository?', 'How do I delete one file in a git repository?'],
  ])('never serves the answer to "%s" for "%s"', async (first, second) => {
    expect((await ask(first)).cache).toBe('miss');
    const calls = upstream.calls.length;
    expect(await ask(second)).toMatchObject({ cache: 'miss', text: `echo: ${second}` });
    expect(upstream.calls.length).toBe(calls + 1);
  });
});
