import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningGateway } from '../helpers/gateway.js';
import { startGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Gemini's generateContent has no switch for one tool call per turn (its FunctionCallingConfig holds a mode and allowed
 * function names only), and may answer with several calls. An OpenAI client's `parallel_tool_calls: false` (an
 * Anthropic client's `disable_parallel_tool_use`) asks for what Gemini cannot promise: a 400 naming the field, in the
 * route's shape, no Gemini call, and a route's next target answers instead. Where no call can come (no tools, or
 * tool_choice none) it asks nothing and the request goes on. `user` changes nothing in an answer and has no Gemini
 * field: it is not sent, and the request goes on.
 */

let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 2 }, breaker: { enabled: false } } },
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
    },
    routes: { 'tools-chat': { targets: [{ model: 'gemini/gemini-2.5-flash', weight: 1 }], fallbacks: ['openai/gpt-4o-mini'] } },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await openai?.close();
});
beforeEach(() => {
  gemini.reset();
  openai.reset();
});

const weather: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris and Rome?' }];

async function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

describe('parallel_tool_calls: false to Gemini', () => {
  it('is a 400 naming the field, before any Gemini call; where no call can come, and with true, the request goes on', async () => {
    for (const stream of [false, true]) {
      const error = await refusal(tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: question, tools: [weather], parallel_tool_calls: false, stream }));
      expect(error.status).toBe(400);
      expect(error.param).toBe('parallel_tool_calls');
      expect(error.code).toBe('unsupported_for_provider');
      expect(error.message).toMatch(/parallel_tool_calls: false .*Gemini/);
    }
    const forced = await refusal(tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: question, tools: [weather], tool_choice: 'required', parallel_tool_calls: false }));
    expect(forced.param).toBe('parallel_tool_calls');
    expect(gemini.calls).toHaveLength(0);

    // No call can come: nothing is asked of Gemini, the request goes on.
    const noCalls = await tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: question, tools: [weather], tool_choice: 'none', parallel_tool_calls: false });
    expect(noCalls.choices[0]?.message.content).toBeTruthy();
    const noTools = await tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: question, parallel_tool_calls: false });
    expect(noTools.choices[0]?.message.content).toBeTruthy();
    // `true` is Gemini's own behaviour; `user` has no Gemini field and changes nothing in the answer: not sent.
    const parallel = await tg.client.chat.completions.create({ model: 'gemini/gemini-2.5-flash', messages: question, tools: [weather], parallel_tool_calls: true, user: 'end-user-7' });
    expect(parallel.choices[0]?.finish_reason).toBeTruthy();
    expect(gemini.calls).toHaveLength(3);
    for (const call of gemini.calls) {
      expect(JSON.stringify(call.body)).not.toContain('end-user-7');
      expect(Object.keys(call.body)).not.toContain('parallel_tool_calls');
    }
  });

  it("through a route, is Gemini's refusal alone: the fallback target answers", async () => {
    const answer = await tg.client.chat.completions.create({ model: 'tools-chat', messages: question, tools: [weather], parallel_tool_calls: false });
    expect(answer.choices[0]?.message).toBeTruthy();
    expect(gemini.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(1);
    expect(openai.calls[0]?.body).toMatchObject({ model: 'gpt-4o-mini', parallel_tool_calls: false });
  });

  it("is the same 400 for an Anthropic client's disable_parallel_tool_use, in Anthropic's shape", async () => {
    const claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const error = await claude.messages
      .create({
        model: 'gemini/gemini-2.5-flash',
        max_tokens: 100,
        tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
        messages: [{ role: 'user', content: 'Weather in Paris and Rome?' }],
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const bad = error as InstanceType<typeof Anthropic.BadRequestError>;
    expect(bad.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(bad.message).toContain('parallel_tool_calls: false');
    expect(gemini.calls).toHaveLength(0);
  });
});
