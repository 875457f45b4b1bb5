import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';

/**
 * `parallel_tool_calls: false` (at most one tool call a turn) through Bedrock's Converse. Converse's ToolConfiguration
 * holds tools and a toolChoice (auto, any, tool) and no such switch. Claude takes Anthropic's
 * `tool_choice.disable_parallel_tool_use` in additionalModelRequestFields, which Bedrock merges into the tool_choice it
 * writes from toolConfig.toolChoice (a `type` there beside a toolChoice is refused as conflicting; without a toolChoice
 * Anthropic wants one). It was dropped: Claude answered with several calls to a client that asked for one. The other
 * families have no setting: a 400 naming the field, as on Gemini, and a route's next target answers instead.
 */

const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const CLAUDE = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
const NOVA = 'amazon.nova-pro-v1:0';
const PROFILE = 'arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/tools7claude';

let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, profiles: { [PROFILE]: 'anthropic.claude-sonnet-4-5-20250929-v1:0' } });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { bedrock: { base_url: upstream.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1', claude_models: [PROFILE] } },
    routes: { 'tools-chat': { targets: [{ model: `bedrock/${NOVA}`, weight: 1 }], fallbacks: [`bedrock/${CLAUDE}`] } },
  });
}, 30_000);
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

const weather: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
};
const question: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'Weather in Paris and Rome? use the tool' }];

async function refusal(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

describe('parallel_tool_calls: false to Claude through Converse', () => {
  it("goes as Anthropic's disable_parallel_tool_use, typed auto when no toolChoice is set, whole and streamed", async () => {
    for (const stream of [false, true]) {
      const request = { model: `bedrock/${CLAUDE}`, messages: question, tools: [weather], parallel_tool_calls: false };
      if (stream) {
        for await (const _ of await tg.client.chat.completions.create({ ...request, stream: true })) void _;
      } else {
        const answer = await tg.client.chat.completions.create(request);
        expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
      }
      const call = upstream.calls.at(-1);
      expect(call?.action).toBe(stream ? 'converse-stream' : 'converse');
      expect(call?.body.toolConfig.toolChoice).toBeUndefined();
      expect(call?.body.additionalModelRequestFields).toEqual({ tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
    }
  });

  it("beside a toolChoice, carries the flag alone (the type is the toolChoice's), for auto, required and a named tool", async () => {
    const choices: Array<[OpenAI.ChatCompletionToolChoiceOption, unknown]> = [
      ['auto', { auto: {} }],
      ['required', { any: {} }],
      [{ type: 'function', function: { name: 'get_weather' } }, { tool: { name: 'get_weather' } }],
    ];
    for (const [choice, converse] of choices) {
      const answer = await tg.client.chat.completions.create({ model: `bedrock/${CLAUDE}`, messages: question, tools: [weather], tool_choice: choice, parallel_tool_calls: false });
      expect((answer.choices[0]?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall).function.name).toBe('get_weather');
      const body = upstream.calls.at(-1)?.body;
      expect(body.toolConfig.toolChoice).toEqual(converse);
      expect(body.additionalModelRequestFields).toEqual({ tool_choice: { disable_parallel_tool_use: true } });
    }
  });

  it('asks nothing where no call can come (no tools, tool_choice none) or with true, and keeps thinking beside it', async () => {
    await tg.client.chat.completions.create({ model: `bedrock/${CLAUDE}`, messages: question, tools: [weather], tool_choice: 'none', parallel_tool_calls: false });
    await tg.client.chat.completions.create({ model: `bedrock/${CLAUDE}`, messages: question, parallel_tool_calls: false });
    await tg.client.chat.completions.create({ model: `bedrock/${CLAUDE}`, messages: question, tools: [weather], parallel_tool_calls: true });
    expect(upstream.calls).toHaveLength(3);
    for (const call of upstream.calls) expect(call.body.additionalModelRequestFields?.tool_choice).toBeUndefined();

    await tg.client.chat.completions.create({ model: `bedrock/${CLAUDE}`, messages: question, tools: [weather], parallel_tool_calls: false, reasoning_effort: 'low', max_completion_tokens: 4000 });
    const fields = upstream.calls.at(-1)?.body.additionalModelRequestFields;
    expect(fields.thinking).toMatchObject({ type: 'enabled' });
    expect(fields.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
  });

  it("reaches Claude behind an application inference profile listed in claude_models", async () => {
    await tg.client.chat.completions.create({ model: `bedrock/${PROFILE}`, messages: question, tools: [weather], parallel_tool_calls: false });
    expect(upstream.calls.at(-1)?.body.additionalModelRequestFields).toEqual({ tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
  });
});

describe('parallel_tool_calls: false to the other Converse families', () => {
  it('is a 400 naming the field, before any Bedrock call, whole and streamed; without tools or with none it goes on', async () => {
    for (const stream of [false, true]) {
      const error = await refusal(tg.client.chat.completions.create({ model: `bedrock/${NOVA}`, messages: question, tools: [weather], parallel_tool_calls: false, stream }));
      expect(error.status).toBe(400);
      expect(error.param).toBe('parallel_tool_calls');
      expect(error.code).toBe('unsupported_for_provider');
      expect(error.message).toMatch(/bedrock: parallel_tool_calls: false is not supported.*claude_models/);
    }
    expect(upstream.calls).toHaveLength(0);

    const noCalls = await tg.client.chat.completions.create({ model: `bedrock/${NOVA}`, messages: question, tools: [weather], tool_choice: 'none', parallel_tool_calls: false });
    expect(noCalls.choices[0]?.message.content).toBeTruthy();
    const noTools = await tg.client.chat.completions.create({ model: `bedrock/${NOVA}`, messages: question, parallel_tool_calls: false });
    expect(noTools.choices[0]?.message.content).toBeTruthy();
    const parallel = await tg.client.chat.completions.create({ model: `bedrock/${NOVA}`, messages: question, tools: [weather], parallel_tool_calls: true });
    expect(parallel.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(upstream.calls).toHaveLength(3);
    for (const call of upstream.calls) expect(call.body.additionalModelRequestFields).toBeUndefined();
  });

  it("through a route, is that target's refusal alone: the Claude fallback answers with the flag", async () => {
    const answer = await tg.client.chat.completions.create({ model: 'tools-chat', messages: question, tools: [weather], parallel_tool_calls: false });
    expect(answer.choices[0]?.message.tool_calls).toHaveLength(1);
    expect(upstream.calls.map((call) => call.modelId)).toEqual([CLAUDE]);
    expect(upstream.calls[0]?.body.additionalModelRequestFields).toEqual({ tool_choice: { type: 'auto', disable_parallel_tool_use: true } });
  });

  it("is the same 400 for an Anthropic client's disable_parallel_tool_use, in Anthropic's shape", async () => {
    const claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const error = await claude.messages
      .create({
        model: `bedrock/${NOVA}`,
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
    expect(upstream.calls).toHaveLength(0);
  });
});
