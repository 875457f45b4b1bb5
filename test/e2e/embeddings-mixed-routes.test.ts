import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Routes mixing providers whose embeddings APIs take different batches: Gemini's batchEmbedContents takes at most
// 100 texts a call (tollgate refuses more before calling it), OpenAI's takes 2,048.
let openai: ScriptedUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;

const texts = (count: number): string[] => Array.from({ length: count }, (_, i) => `text number ${i}`);

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-test' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    // Weights alone decide between targets that can both take a batch: adaptive balancing would move traffic away
    // from a target whose first answers were slower, which a loaded machine makes likely.
    settings: { routing: { adaptive: false } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-test' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
    },
    routes: {
      'embed-mixed': { targets: [{ model: 'gemini/text-embedding-004', weight: 1 }, { model: 'openai/text-embedding-3-small', weight: 1 }] },
      'embed-chain': { targets: [{ model: 'gemini/text-embedding-004', weight: 1 }], fallbacks: ['openai/text-embedding-3-small'], retry: { max_attempts: 1 } },
    },
  });
});
afterAll(async () => {
  await tg.stop();
  await openai.close();
  await gemini.close();
});
beforeEach(() => {
  openai.reset();
  gemini.reset();
});

describe('embeddings through routes mixing providers', () => {
  it('sends a batch one target cannot take to the targets that can, every time', async () => {
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await tg.client.embeddings.create({ model: 'embed-mixed', input: texts(150) }).withResponse());
    for (const { data, response } of answers) {
      expect(data.data).toHaveLength(150);
      expect(response.headers.get('x-tollgate-provider')).toBe('openai');
      expect(response.headers.get('x-tollgate-attempts')).toBe('1');
    }
    expect(gemini.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(4);

    // A batch both take still goes where the weights say.
    const small = [];
    for (let i = 0; i < 4; i++) small.push((await tg.client.embeddings.create({ model: 'embed-mixed', input: texts(3) }).withResponse()).response.headers.get('x-tollgate-provider'));
    expect(small.sort()).toEqual(['gemini', 'gemini', 'openai', 'openai']);
  });

  it('moves on to a fallback without spending an attempt on a target that refused the request before calling it', async () => {
    const { data, response } = await tg.client.embeddings.create({ model: 'embed-chain', input: texts(101) }).withResponse();
    expect(data.data).toHaveLength(101);
    expect(response.headers.get('x-tollgate-provider')).toBe('openai');
    expect(response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(openai.calls[0]?.body).toMatchObject({ model: 'text-embedding-3-small', input: texts(101) });
  });

  it('gives the refusal of the first target when no target can take the request', async () => {
    const error = await tg.client.embeddings.create({ model: 'gemini/text-embedding-004', input: texts(101) }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).error).toMatchObject({ param: 'input', code: 'invalid_value' });
    expect((error as Error).message).toContain('Gemini embeds at most 100 inputs per request; this request has 101');
    expect(gemini.calls).toHaveLength(0);
  });
});
