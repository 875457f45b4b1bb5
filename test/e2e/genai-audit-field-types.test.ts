import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Fields Google reads as objects (proto messages) or lists, sent as something else: Google answers 400
// INVALID_ARGUMENT. The translation read them only when they had the right shape, so on a provider of another format
// the field was silently no field (a thinkingConfig of 5 was no thinking config) and the request was answered.

let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
});

afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await openai?.close();
});

beforeEach(() => {
  gemini.reset();
  openai.reset();
});

const CONTENTS = [{ role: 'user', parts: [{ text: 'hello' }] }];

const MALFORMED: Array<[string, Record<string, unknown>]> = [
  ['thinking_config', { generationConfig: { thinkingConfig: 5 } }],
  ['response_schema', { generationConfig: { responseMimeType: 'application/json', responseSchema: 'an object please' } }],
  ['tool_config', { toolConfig: 'AUTO' }],
  ['function_declarations', { tools: [{ functionDeclarations: { name: 'lookup' } }] }],
  ['parameters', { tools: [{ functionDeclarations: [{ name: 'lookup', parameters: 5 }] }] }],
];

async function generate(model: string, extra: Record<string, unknown>): Promise<Response> {
  return fetch(`${tg.url}/genai/v1beta/models/${encodeURIComponent(model)}:generateContent`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
    body: JSON.stringify({ contents: CONTENTS, ...extra }),
  });
}

describe('a field of the wrong type', () => {
  it.each(MALFORMED)('%s is a 400 INVALID_ARGUMENT naming it, whichever provider serves the model', async (name, extra) => {
    for (const model of ['openai/gpt-4o', 'gemini-2.5-flash']) {
      const res = await generate(model, extra);
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { code: number; status: string; message: string } };
      expect(body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });
      expect(body.error.message).toContain(name);
    }
    expect(openai.calls).toHaveLength(0);
    expect(gemini.calls).toHaveLength(0);
  });
});
