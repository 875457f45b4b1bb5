import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * OpenAI's chat models (gpt-4o, gpt-4.1, ...) refuse `reasoning_effort` with a 400; its reasoning models take it.
 * The effort tollgate derives from an Anthropic thinking budget or a Gemini thinkingConfig goes only to the models
 * that take it, so an Anthropic client with extended thinking (Claude Code) routed to gpt-4o gets an answer; a /v1
 * client's own reasoning_effort is still sent as written.
 */

let openai: ScriptedUpstream;
let tg: RunningGateway;
let anthropic: Anthropic;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-upstream', vendor: 'openai' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' } },
  });
  anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
});

beforeEach(() => openai.reset());

const thinking = { type: 'enabled', budget_tokens: 2048 } as const;

describe('an Anthropic client with extended thinking, on OpenAI', () => {
  it('reaches gpt-4o, which refuses reasoning_effort, without one (whole and streamed)', async () => {
    const message = await anthropic.messages.create({ model: 'openai/gpt-4o', max_tokens: 4000, thinking, messages: [{ role: 'user', content: 'ponder this' }] });
    expect(message.content.some((block) => block.type === 'text')).toBe(true);
    const streamed = await anthropic.messages.stream({ model: 'openai/gpt-4.1-mini', max_tokens: 4000, thinking, messages: [{ role: 'user', content: 'ponder this' }] }).finalMessage();
    expect(streamed.stop_reason).toBe('end_turn');
    expect(openai.calls.map((call) => 'reasoning_effort' in call.body)).toEqual([false, false]);
  });

  it('keeps it for the reasoning models, at a level each takes', async () => {
    for (const model of ['o3', 'gpt-5-mini', 'gpt-5-pro']) {
      await anthropic.messages.create({ model: `openai/${model}`, max_tokens: 4000, thinking, messages: [{ role: 'user', content: 'ponder this' }] });
    }
    // A 2,048-token budget is medium; gpt-5-pro takes high only.
    expect(openai.calls.map((call) => [call.body.model, call.body.reasoning_effort])).toEqual([
      ['o3', 'medium'],
      ['gpt-5-mini', 'medium'],
      ['gpt-5-pro', 'high'],
    ]);
  });
});

describe('a Gemini client with a thinkingConfig, on OpenAI', () => {
  it('reaches gpt-4o without reasoning_effort', async () => {
    const ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o', contents: 'ponder this', config: { thinkingConfig: { thinkingBudget: 2048 } } });
    expect(response.text).toBeTruthy();
    expect(openai.calls[0]?.body).not.toHaveProperty('reasoning_effort');
  });
});

describe('an OpenAI client', () => {
  it("has its own reasoning_effort sent as written, and gets OpenAI's answer", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
    const error = await client.chat.completions.create({ model: 'openai/gpt-4o', reasoning_effort: 'low', messages: [{ role: 'user', content: 'hi' }] }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).message).toContain("'reasoning_effort' is not supported with this model");
    expect(openai.calls[0]?.body.reasoning_effort).toBe('low');
  });
});
