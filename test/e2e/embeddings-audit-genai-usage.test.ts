import { GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// Gemini's embeddings answers carry the input's token count (EmbeddingUsageMetadata, `usageMetadata.promptTokenCount`,
// https://ai.google.dev/api/embeddings), which the @google/genai SDK hands to its caller as `usageMetadata`. The
// /genai route wrote the vectors only: a client counting its tokens got nothing, from Gemini itself or any provider.
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-test' });
  tg = await startGateway({
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-test' },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
});
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await openai?.close();
});
beforeEach(() => openai.reset());

describe('/genai embeddings report their usage', () => {
  it('as Gemini itself answers the same request', async () => {
    const request = { model: 'text-embedding-004', contents: ['the first document to embed', 'a second one'], config: { outputDimensionality: 8 } };
    const direct = await new GoogleGenAI({ apiKey: 'gemini-test-key', httpOptions: { baseUrl: gemini.url, timeout: 15_000 } }).models.embedContent(request);
    expect(direct.usageMetadata?.promptTokenCount).toBeGreaterThan(0);
    const through = await ai.models.embedContent(request);
    expect(through.embeddings).toEqual(direct.embeddings);
    expect(through.usageMetadata?.promptTokenCount).toBe(direct.usageMetadata?.promptTokenCount);
  });

  it('from an OpenAI-format provider, its prompt_tokens', async () => {
    const response = await ai.models.embedContent({ model: 'openai/text-embedding-3-small', contents: ['one two three', 'four five'] });
    expect(response.embeddings).toHaveLength(2);
    // The scripted OpenAI upstream counts words: 3 + 2.
    expect(response.usageMetadata?.promptTokenCount).toBe(5);
  });

  it('on a REST embedContent too', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/openai%2Ftext-embedding-3-small:embedContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-key' },
      body: JSON.stringify({ content: { parts: [{ text: 'one two three four' }] } }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { embedding: { values: number[] }; usageMetadata?: { promptTokenCount: number } };
    expect(body.embedding.values).toHaveLength(8);
    expect(body.usageMetadata).toEqual({ promptTokenCount: 4 });
  });
});
