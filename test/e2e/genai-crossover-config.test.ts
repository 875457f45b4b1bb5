import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Generation settings of a /genai request reaching a provider of another format (OpenAI), as the
// @google/genai SDK and raw clients send them: what Google's API reads must not be silently dropped on the way.

let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
});

beforeEach(() => openai.reset());

describe('/genai generation settings -> OpenAI model', () => {
  it('reads candidateCount written as a string, as protobuf JSON allows, like the other numbers', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'two please' }] }], generationConfig: { candidateCount: '2', maxOutputTokens: '40' } }),
    });
    expect(res.status).toBe(200);
    expect(openai.calls.at(-1)?.body).toMatchObject({ n: 2, max_completion_tokens: 40 });
  });

  it('refuses a candidateCount that is not a number, in Google error shape', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { candidateCount: 'two' } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
    expect(openai.calls).toHaveLength(0);
  });
});
