import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Mistral's embeddings API names the vector size `output_dimension` and refuses fields outside its schema
// (extra_forbidden), OpenAI's `dimensions` and `user` among them: sent as an OpenAI client wrote them, a request for
// 256-dimension codestral-embed vectors failed instead of being served.
let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-mistral', vendor: 'mistral' });
  tg = await startGateway({ providers: { mistral: { base_url: `${upstream.url}/v1`, api_key: 'sk-mistral' } } });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

describe('embeddings on Mistral', () => {
  it("an OpenAI client's dimensions reach Mistral as output_dimension, and its user is left out", async () => {
    const response = await tg.client.embeddings.create({ model: 'mistral/codestral-embed', input: ['def f(): pass', 'x = 1'], dimensions: 256, user: 'user-42' });
    expect(response.data).toHaveLength(2);
    expect(response.data[0]?.embedding).toHaveLength(256);
    expect(upstream.calls[0]?.body).toEqual({ model: 'codestral-embed', input: ['def f(): pass', 'x = 1'], output_dimension: 256, encoding_format: 'base64' });
  });

  it("a /genai client's outputDimensionality does too", async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const response = await ai.models.embedContent({ model: 'mistral/codestral-embed', contents: 'def f(): pass', config: { outputDimensionality: 128 } });
    expect(response.embeddings?.[0]?.values).toHaveLength(128);
    expect(upstream.calls[0]?.body).toEqual({ model: 'codestral-embed', input: ['def f(): pass'], encoding_format: 'float', output_dimension: 128 });
  });

  it('a request without them goes as it came', async () => {
    const response = await tg.client.embeddings.create({ model: 'mistral/mistral-embed', input: 'hello', encoding_format: 'float' });
    expect(response.data[0]?.embedding).toHaveLength(8);
    expect(upstream.calls[0]?.body).toEqual({ model: 'mistral-embed', input: 'hello', encoding_format: 'float' });
  });
});
