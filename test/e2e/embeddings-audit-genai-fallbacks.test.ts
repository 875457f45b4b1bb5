import { ApiError, GoogleGenAI } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';

// tollgate's own request `fallbacks` field works on /genai as on /v1 (chat and embeddings alike on /v1), but the
// /genai embeddings methods ignored it: the request failed with its first target, and a fallback naming nothing
// was no 400.
let primary: ScriptedUpstream;
let spare: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  primary = await startOpenAIUpstream({ apiKey: 'sk-test' });
  spare = await startOpenAIUpstream({ apiKey: 'sk-test' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2 } } },
    providers: {
      openai: { base_url: `${primary.url}/v1`, api_key: 'sk-test' },
      spare: { type: 'openai', base_url: `${spare.url}/v1`, api_key: 'sk-test' },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000, retryOptions: { attempts: 1 } } });
});
afterAll(async () => {
  await tg?.stop();
  await primary?.close();
  await spare?.close();
});
beforeEach(() => {
  primary.reset();
  spare.reset();
});

describe('/genai embeddings and the request fallbacks', () => {
  it('fall back to the models the request names, which no upstream sees', async () => {
    primary.setMode({ kind: 'error', status: 503 });
    const response = await ai.models.embedContent({
      model: 'openai/text-embedding-3-small',
      contents: ['first', 'second'],
      config: { httpOptions: { extraBody: { fallbacks: ['spare/text-embedding-3-small'] } } },
    });
    expect(response.embeddings).toHaveLength(2);
    expect(response.sdkHttpResponse?.headers?.['x-tollgate-provider']).toBe('spare');
    expect(spare.calls[0]?.body).toEqual({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format: 'float' });
  });

  it('and one naming nothing is a 400 before any call', async () => {
    const error = await ai.models
      .embedContent({ model: 'openai/text-embedding-3-small', contents: 'x', config: { httpOptions: { extraBody: { fallbacks: ['nowhere/at-all'] } } } })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect(primary.calls).toHaveLength(0);
  });
});
