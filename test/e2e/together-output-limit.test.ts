import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Together AI's chat API takes the output limit as `max_tokens` only (no `max_completion_tokens`, which it does not
 * read: vendorView in vendor-refusals.ts), so a limit tollgate sends must reach it under that name.
 */

let together: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  together = await startOpenAIUpstream({ apiKey: 'together-upstream', vendor: 'together' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { together: { base_url: `${together.url}/v1`, api_key: 'together-upstream' } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await together?.close();
});

beforeEach(() => together.reset());

const MODEL = 'together/meta-llama/Llama-3.3-70B-Instruct-Turbo';
const PROMPT = 'one two three four five six seven eight';

describe('an output limit sent to Together AI', () => {
  it("holds for an Anthropic client's max_tokens", async () => {
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const message = await anthropic.messages.create({ model: MODEL, max_tokens: 3, messages: [{ role: 'user', content: PROMPT }] });
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.output_tokens).toBe(3);
    expect(together.calls[0]?.body.max_tokens).toBe(3);
    expect(together.calls[0]?.body).not.toHaveProperty('max_completion_tokens');
  });

  it("holds for an OpenAI client's max_completion_tokens, streamed too", async () => {
    const completion = await tg.client.chat.completions.create({ model: MODEL, max_completion_tokens: 2, messages: [{ role: 'user', content: PROMPT }] });
    expect(completion.choices[0]?.finish_reason).toBe('length');
    expect(completion.usage?.completion_tokens).toBe(2);

    const stream = await tg.client.chat.completions.create({ model: MODEL, max_completion_tokens: 2, stream: true, messages: [{ role: 'user', content: PROMPT }] });
    let finish: string | null | undefined;
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
    expect(finish).toBe('length');
  });

  it("holds for a Gemini client's maxOutputTokens", async () => {
    const response = await fetch(`${tg.url}/genai/v1beta/models/${encodeURIComponent(MODEL)}:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: PROMPT }] }], generationConfig: { maxOutputTokens: 4 } }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { candidates: { finishReason: string }[] };
    expect(body.candidates[0]?.finishReason).toBe('MAX_TOKENS');
  });
});
