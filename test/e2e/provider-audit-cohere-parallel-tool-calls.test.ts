import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Cohere's v2 Chat API has no switch for one tool call per turn (its tool fields are `tools`, `strict_tools` and
 * `tool_choice` REQUIRED or NONE), and its models may answer with several calls. An OpenAI client's
 * `parallel_tool_calls: false` (an Anthropic client's `disable_parallel_tool_use`) was dropped silently: the client got
 * what it had asked not to. Now it is a 400 naming the field, as on Gemini, before any Cohere call, and a route's next
 * target answers instead; where no call can come (no tools, tool_choice none) it asks nothing and the request goes on.
 */

let cohere: CohereUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
const MODEL = 'cohere/command-a-03-2025';

beforeAll(async () => {
  cohere = await startCohereUpstream({ apiKey: 'co-upstream-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-upstream-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
    },
    routes: { 'tools-chat': { targets: [{ model: MODEL, weight: 1 }], fallbacks: ['openai/gpt-4o-mini'] } },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await cohere?.close();
  await openai?.close();
});
beforeEach(() => {
  cohere.reset();
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

describe('parallel_tool_calls: false to Cohere', () => {
  it('is a 400 naming the field, before any Cohere call, whole, streamed and with tool_choice required', async () => {
    for (const extra of [{ stream: false }, { stream: true }, { tool_choice: 'required' as const }]) {
      const error = await refusal(tg.client.chat.completions.create({ model: MODEL, messages: question, tools: [weather], parallel_tool_calls: false, ...extra }));
      expect(error.status).toBe(400);
      expect(error.param).toBe('parallel_tool_calls');
      expect(error.code).toBe('unsupported_for_provider');
      expect(error.message).toMatch(/cohere: parallel_tool_calls: false is not supported.*Cohere/);
    }
    expect(cohere.calls).toHaveLength(0);
  });

  it('asks nothing where no call can come (no tools, tool_choice none), nor with true: the request goes on', async () => {
    const noCalls = await tg.client.chat.completions.create({ model: MODEL, messages: question, tools: [weather], tool_choice: 'none', parallel_tool_calls: false });
    expect(noCalls.choices[0]?.message).toBeTruthy();
    const noTools = await tg.client.chat.completions.create({ model: MODEL, messages: question, parallel_tool_calls: false });
    expect(noTools.choices[0]?.message.content).toBeTruthy();
    const parallel = await tg.client.chat.completions.create({ model: MODEL, messages: question, tools: [weather], parallel_tool_calls: true });
    expect(parallel.choices[0]?.finish_reason).toBeTruthy();
    expect(cohere.calls).toHaveLength(3);
    for (const call of cohere.calls) expect(Object.keys(call.body)).not.toContain('parallel_tool_calls');
  });

  it("through a route, is Cohere's refusal alone: the fallback target answers", async () => {
    const answer = await tg.client.chat.completions.create({ model: 'tools-chat', messages: question, tools: [weather], parallel_tool_calls: false });
    expect(answer.choices[0]?.message).toBeTruthy();
    expect(cohere.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(1);
    expect(openai.calls[0]?.body).toMatchObject({ model: 'gpt-4o-mini', parallel_tool_calls: false });
  });

  it("is the same 400 for an Anthropic client's disable_parallel_tool_use, in Anthropic's shape", async () => {
    const claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const error = await claude.messages
      .create({
        model: MODEL,
        max_tokens: 100,
        tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
        tool_choice: { type: 'any', disable_parallel_tool_use: true },
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
    expect(cohere.calls).toHaveLength(0);
  });
});
