import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Most Grok models reason without a dial and answer 400 to `reasoning_effort`; grok-3-mini takes only low and high
 * (docs.x.ai/docs/guides/reasoning). The effort tollgate derives from an Anthropic thinking budget or a Gemini
 * thinkingConfig is sent only as the model takes it; a /v1 client's own reasoning_effort is sent as written.
 */

let xai: ScriptedUpstream;
let tg: RunningGateway;
let anthropic: Anthropic;

beforeAll(async () => {
  xai = await startOpenAIUpstream({ apiKey: 'xai-upstream', vendor: 'xai' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { xai: { base_url: `${xai.url}/v1`, api_key: 'xai-upstream' } },
  });
  anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await xai?.close();
});

beforeEach(() => xai.reset());

describe('an Anthropic client with extended thinking, on Grok', () => {
  it('reaches grok-4, which refuses reasoning_effort, without one', async () => {
    const message = await anthropic.messages.create({
      model: 'xai/grok-4',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'ponder this' }],
    });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    expect(xai.calls[0]?.body).not.toHaveProperty('reasoning_effort');
    expect(xai.calls[0]?.body).not.toHaveProperty('thinking');
  });

  it('streams from grok-4-1-fast-reasoning without one', async () => {
    const stream = anthropic.messages.stream({
      model: 'xai/grok-4-1-fast-reasoning',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'ponder this' }],
    });
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('end_turn');
    expect(xai.calls[0]?.body).not.toHaveProperty('reasoning_effort');
  });

  it('asks grok-3-mini, which takes low and high, for high where the budget means medium', async () => {
    await anthropic.messages.create({
      model: 'xai/grok-3-mini',
      max_tokens: 4000,
      thinking: { type: 'enabled', budget_tokens: 2048 },
      messages: [{ role: 'user', content: 'ponder this' }],
    });
    expect(xai.calls[0]?.body.reasoning_effort).toBe('high');
  });
});

describe('a Gemini client with a thinkingConfig, on Grok', () => {
  it('reaches grok-4 without reasoning_effort', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const response = await ai.models.generateContent({ model: 'xai/grok-4', contents: 'ponder this', config: { thinkingConfig: { thinkingBudget: 2048 } } });
    expect(response.text).toBeTruthy();
    expect(xai.calls[0]?.body).not.toHaveProperty('reasoning_effort');
  });
});

describe('an OpenAI client', () => {
  it("has its own reasoning_effort sent as written, and gets xAI's answer", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
    const error = await client.chat.completions
      .create({ model: 'xai/grok-4', reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('does not support parameter reasoningEffort');
    expect(xai.calls[0]?.body.reasoning_effort).toBe('low');
  });
});
