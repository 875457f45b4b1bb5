import Anthropic from '@anthropic-ai/sdk';
import { calcPrice } from '@pydantic/genai-prices';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { countTextTokens } from '../../src/tokens/tokenizer.js';
import { bedrockEmbeddingTokens, bedrockEmbeddingVector, startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { thinkingSignature } from '../upstream/anthropic-upstream.js';

const NATIVE_MODEL = 'anthropic.claude-3-5-sonnet-20241022-v2:0';
const MODEL = `bedrock/${NATIVE_MODEL}`;
const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const API_KEY = 'ABSKQmVkcm9ja0FQSUtleS10ZXN0';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

let upstream: BedrockUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET, apiKey: API_KEY });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      bedrock: { base_url: upstream.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
      bedrockkey: { type: 'bedrock', base_url: upstream.url, api_key: API_KEY },
      wrongsecret: { type: 'bedrock', base_url: upstream.url, api_key: `${ACCESS_KEY}:not-the-secret`, region: 'eu-west-1' },
      wrongregion: { type: 'bedrock', base_url: upstream.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'us-west-2' },
      wrongapikey: { type: 'bedrock', base_url: upstream.url, api_key: 'ABSKbm90LXRoaXMtb25l' },
    },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await promise.then(() => null, (err: unknown) => err);
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

async function lastLog(matches: (entry: any) => boolean): Promise<any> {
  // Without a gateway key the log entry is written after the answer; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const body = (await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as any;
    if (body.data?.[0] && matches(body.data[0])) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe('bedrock through the gateway', () => {
  it('answers a text request with a SigV4-signed Converse call the upstream verifies', async () => {
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello bedrock' },
      ],
      max_tokens: 100,
      temperature: 0.5,
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hello bedrock');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.model).toBe(MODEL);
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
    const call = upstream.calls[0];
    expect(call?.path).toBe('/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse');
    expect(call?.modelId).toBe(NATIVE_MODEL);
    expect(call?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTESTBEDROCK\/\d{8}\/eu-west-1\/bedrock\/aws4_request/);
    expect(call?.body).toEqual({
      messages: [{ role: 'user', content: [{ text: 'hello bedrock' }] }],
      system: [{ text: 'be brief' }],
      inferenceConfig: { maxTokens: 100, temperature: 0.5 },
    });
  });

  it('sends a Bedrock API key as a bearer token', async () => {
    const completion = await tg.client.chat.completions.create({ model: `bedrockkey/${NATIVE_MODEL}`, messages: [{ role: 'user', content: 'with a key' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: with a key');
    expect(upstream.calls[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('streams an answer from binary event-stream frames, with usage when asked', async () => {
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'stream me please' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let pieces = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) {
        text += content;
        pieces++;
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('echo: stream me please');
    expect(pieces).toBeGreaterThan(1);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(upstream.calls[0]?.path).toMatch(/\/converse-stream$/);
  });

  it('reassembles frames the upstream splits across writes', async () => {
    upstream.enqueue({ kind: 'split', bytes: 7 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'split into tiny writes' }], stream: true });
    let text = '';
    let usageChunks = 0;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage || chunk.choices.length === 0) usageChunks++;
    }
    expect(text).toBe('echo: split into tiny writes');
    // No include_usage, so no usage-only chunk.
    expect(usageChunks).toBe(0);
  });

  it('round-trips a tool call and sends the tool result in native toolResult form', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'use the tool for Paris' }];
    const first = await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
    const call = first.choices[0]?.message.tool_calls?.[0];
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toMatchObject({ city: 'Paris' });

    const second = await tg.client.chat.completions.create({
      model: MODEL,
      tools: [weather],
      messages: [...messages, first.choices[0]!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' }],
    });
    expect(second.choices[0]?.message.content).toBe('tool said: sunny, 21C');
    const sent = upstream.calls[1]?.body;
    expect(sent.messages[1].content).toEqual([{ toolUse: { toolUseId: call.id, name: 'get_weather', input: JSON.parse(call.function.arguments) } }]);
    expect(sent.messages[2]).toEqual({ role: 'user', content: [{ toolResult: { toolUseId: call.id, content: [{ text: 'sunny, 21C' }] } }] });
    expect(sent.toolConfig.tools[0].toolSpec).toEqual({ name: 'get_weather', description: 'Weather for a city', inputSchema: { json: weather.function.parameters } });
  });

  it('sends a tool result with no output as a non-blank toolResult, which Converse requires', async () => {
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      tools: [weather],
      messages: [
        { role: 'user', content: 'weather in Paris' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '' },
      ],
    });
    expect(completion.choices[0]?.message.content).toMatch(/^tool said: /);
    const result = upstream.calls[0]?.body.messages[2].content[0].toolResult;
    expect(result.toolUseId).toBe('call_1');
    expect(result.content).toHaveLength(1);
    expect(result.content[0].text.trim()).not.toBe('');
  });

  it('answers a turn after tool calls when the client offers no tools any more', async () => {
    // An agent's last turn ("now summarise") often drops `tools` but keeps the tool history, which OpenAI accepts.
    const call = { id: 'tooluse_history1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'user', content: 'use the tool for Paris' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('tool said: sunny, 21C');
    expect(completion.choices[0]?.message.tool_calls).toBeUndefined();
    const sent = upstream.calls[0]?.body;
    // Converse refuses toolUse/toolResult blocks without a toolConfig; none of the client's tools is offered in it.
    expect(sent.toolConfig.tools.map((tool: any) => tool.toolSpec.name)).not.toContain('get_weather');
    expect(sent.toolConfig).not.toHaveProperty('toolChoice');
  });

  it("continues a history whose tool call ids another vendor wrote (Kimi's functions.name:index)", async () => {
    // Converse takes a toolUseId of 1 to 64 characters of [a-zA-Z0-9_-] and refuses the whole request otherwise.
    const long = `call_${'x'.repeat(80)}`;
    const calls = ['functions.get_weather:0', long].map((id) => ({ id, type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }));
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      tools: [weather],
      messages: [
        { role: 'user', content: 'weather for Paris, twice' },
        { role: 'assistant', content: null, tool_calls: calls },
        { role: 'tool', tool_call_id: 'functions.get_weather:0', content: 'sunny' },
        { role: 'tool', tool_call_id: long, content: 'still sunny' },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('tool said: sunny still sunny');
    const sent = upstream.calls[0]?.body;
    const uses = sent.messages[1].content.map((block: any) => block.toolUse.toolUseId);
    expect(sent.messages[2].content.map((block: any) => block.toolResult.toolUseId)).toEqual(uses);
    expect(new Set(uses).size).toBe(2);
  });

  it('offers none of the client\'s tools on a tool_choice none turn whose history holds tool calls', async () => {
    // Converse has no toolChoice "none" (ToolChoice: auto, any, tool), and its default with tools offered is auto:
    // the real tools would let the model call one the client forbade.
    const call = { id: 'tooluse_history2', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } };
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      tools: [weather],
      tool_choice: 'none',
      messages: [
        { role: 'user', content: 'weather for Paris' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: call.id, content: 'sunny, 21C' },
        { role: 'user', content: 'now use the tool for Rome' },
      ],
    });
    const sent = upstream.calls[0]?.body;
    expect(sent.toolConfig.tools.map((tool: any) => tool.toolSpec.name)).not.toContain('get_weather');
    expect(completion.choices[0]?.message.tool_calls?.map((c) => (c.type === 'function' ? c.function.name : c.type)) ?? []).not.toContain('get_weather');
  });

  it('streams a forced tool call with its arguments in several deltas', async () => {
    const stream = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      stream: true,
    });
    const argumentPieces: string[] = [];
    let name = '';
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (delta.function?.name) name = delta.function.name;
        if (delta.function?.arguments) argumentPieces.push(delta.function.arguments);
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(name).toBe('get_weather');
    expect(argumentPieces.length).toBeGreaterThanOrEqual(3);
    expect(JSON.parse(argumentPieces.join(''))).toMatchObject({ city: 'Paris' });
    expect(finish).toBe('tool_calls');
    expect(upstream.calls[0]?.body.toolConfig.toolChoice).toEqual({ tool: { name: 'get_weather' } });
  });

  it('sends a data: URL image as native image bytes and refuses an http image URL', async () => {
    await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] }],
    });
    expect(upstream.calls[0]?.body.messages[0].content).toEqual([{ text: 'what is this?' }, { image: { format: 'png', source: { bytes: PNG } } }]);

    const error = await failure(
      tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }] }),
    );
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.message).toMatch(/data: URLs/);
    expect(upstream.calls).toHaveLength(1);
  });
});

describe('reasoning to bedrock', () => {
  /** A Claude model that thinks, through a cross-region inference profile as Bedrock serves the newer ones. */
  const CLAUDE = 'bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0';
  const anthropic = (): Anthropic => new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });

  it("passes an OpenAI client's reasoning_effort to Claude as thinking and returns its reasoning", async () => {
    const completion = await tg.client.chat.completions.create({
      model: CLAUDE,
      max_completion_tokens: 3000,
      reasoning_effort: 'medium',
      messages: [{ role: 'user', content: 'ponder' }],
    });
    expect(upstream.calls.at(-1)?.body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 2048 } });
    const message = completion.choices[0]?.message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.reasoning_content).toBe('thinking about: ponder');
    expect(message.content).toBe('echo: ponder');
  });

  it("carries an OpenAI client's tool loop with reasoning_effort to Claude: the turn after the tool call goes without thinking, which Claude would refuse there", async () => {
    const tools: OpenAI.ChatCompletionTool[] = [{ type: 'function', function: { name: 'get_weather', description: 'Weather in a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } }];
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'user', content: 'What is the weather in Oslo?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny, 21 C' },
    ];
    const completion = await tg.client.chat.completions.create({ model: CLAUDE, max_completion_tokens: 3000, reasoning_effort: 'medium', tools, messages });
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(upstream.calls.at(-1)?.body.additionalModelRequestFields).toBeUndefined();
    // A fresh question in the same conversation thinks again.
    await tg.client.chat.completions.create({ model: CLAUDE, max_completion_tokens: 3000, reasoning_effort: 'medium', tools, messages: [...messages, { role: 'assistant', content: 'It is sunny.' }, { role: 'user', content: 'ponder more' }] });
    expect(upstream.calls.at(-1)?.body.additionalModelRequestFields).toEqual({ thinking: { type: 'enabled', budget_tokens: 2048 } });
  });

  it("passes an Anthropic client's thinking to Claude as written (InvokeModel), and streams the thinking back with its signature", async () => {
    const request = { model: CLAUDE, max_tokens: 5000, thinking: { type: 'enabled' as const, budget_tokens: 3000 }, messages: [{ role: 'user' as const, content: 'ponder' }] };
    const message = await anthropic().messages.create(request);
    expect(upstream.calls.at(-1)?.body.thinking).toEqual({ type: 'enabled', budget_tokens: 3000 });
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'thinking about: ponder', signature: thinkingSignature('thinking about: ponder') });
    const streamed = await anthropic().messages.stream(request).finalMessage();
    expect(upstream.calls.at(-1)?.action).toBe('invoke-with-response-stream');
    expect(streamed.content[0]).toMatchObject({ type: 'thinking', thinking: 'thinking about: ponder', signature: thinkingSignature('thinking about: ponder') });
    expect(streamed.content.at(-1)).toMatchObject({ type: 'text', text: 'echo: ponder' });
  });

  it('sends nothing to a family that takes no thinking field', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'bedrock/meta.llama3-70b-instruct-v1:0', reasoning_effort: 'high', messages: [{ role: 'user', content: 'hi' }] });
    expect(upstream.calls.at(-1)?.body).not.toHaveProperty('additionalModelRequestFields');
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
  });

  it('is refused by the scripted upstream as Bedrock does: thinking for another family, a budget past maxTokens', async () => {
    const llama = await fetch(`${upstream.url}/model/meta.llama3-70b-instruct-v1:0/converse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ text: 'hi' }] }], additionalModelRequestFields: { thinking: { type: 'enabled', budget_tokens: 2000 } } }),
    });
    expect(llama.status).toBe(400);
    expect(((await llama.json()) as { message: string }).message).toContain('extraneous key [thinking] is not permitted');
    const tooBig = await anthropic()
      .messages.create({ model: CLAUDE, max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 3000 }, messages: [{ role: 'user', content: 'x' }] })
      .catch((err: unknown) => err);
    expect(tooBig).toBeInstanceOf(Anthropic.BadRequestError);
    expect((tooBig as Error).message).toContain('`max_tokens` must be greater than `thinking.budget_tokens`');
  });
});

describe('bedrock errors through the gateway', () => {
  it('passes a ValidationException on as a 400 with Bedrock\'s message', async () => {
    // Converse allows temperature up to 1; OpenAI up to 2, so the upstream's own validation answers.
    const error = await failure(tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], temperature: 1.5 }));
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.status).toBe(400);
    expect(error.message).toBe('400 inferenceConfig.temperature must be between 0 and 1.');
    expect(error.headers?.get('x-tollgate-provider')).toBe('bedrock');
  });

  it('passes a ThrottlingException on as a 429 with retry-after', async () => {
    upstream.enqueue({ kind: 'error', status: 429, errorType: 'ThrottlingException', message: 'Too many requests, please wait before trying again.', headers: { 'retry-after': '2' } });
    const error = await failure(tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.status).toBe(429);
    expect(error.headers?.get('retry-after')).toBe('2');
    expect(error.message).toBe('429 Too many requests, please wait before trying again.');
  });

  it('maps a signature the upstream rejects, a wrong region and a wrong API key to 401', async () => {
    const said = {
      wrongsecret: /^401 The request signature we calculated does not match/,
      wrongregion: /^401 Credential should be scoped to a valid region and service/,
      wrongapikey: /^401 Invalid API Key format/,
    };
    for (const [provider, message] of Object.entries(said)) {
      const error = await failure(tg.client.chat.completions.create({ model: `${provider}/${NATIVE_MODEL}`, messages: [{ role: 'user', content: 'hi' }] }));
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      // AWS's words as written; which configured provider they came from is the header.
      expect(error.message).toMatch(message);
      expect(error.headers?.get('x-tollgate-provider')).toBe(provider);
    }
    expect(upstream.calls).toHaveLength(3);
  });

  it('passes AccessDenied on as 403 and an unknown model as 404', async () => {
    upstream.enqueue(
      { kind: 'error', status: 403, errorType: 'AccessDeniedException', message: "You don't have access to the model with the specified model ID." },
      { kind: 'error', status: 404, errorType: 'ResourceNotFoundException', message: 'Model not found.' },
    );
    const denied = await failure(tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const missing = await failure(tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing.message).toBe('404 Model not found.');
  });

  it('ends a stream whose upstream sends an exception frame with an error the client raises', async () => {
    upstream.enqueue({ kind: 'stream-exception', exceptionType: 'modelStreamErrorException', message: 'The model stream broke.', afterEvents: 3 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'a long answer please' }], stream: true });
    let text = '';
    const error = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toContain('The model stream broke.');
    expect(text.length).toBeGreaterThan(0);
  });

  it('answers a validationException that opens the stream with a 400, not a retryable 502', async () => {
    // ConverseStreamOutput: validationException is HTTP 400, serviceUnavailableException 503, internalServerException 500.
    upstream.enqueue({ kind: 'stream-exception', exceptionType: 'validationException', message: 'Input is too long for requested model.', afterEvents: 0 });
    const invalid = await failure(tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'too long' }], stream: true }));
    expect(invalid.status).toBe(400);
    expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
    expect(invalid.message).toContain('Input is too long for requested model.');
    upstream.enqueue({ kind: 'stream-exception', exceptionType: 'serviceUnavailableException', message: 'Bedrock is unable to process your request.', afterEvents: 0 });
    const unavailable = await failure(tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true }));
    expect(unavailable.status).toBe(503);
  });

  describe('a stop reason that says the answer failed', () => {
    let cached: RunningGateway;
    beforeAll(async () => {
      cached = await startGateway({
        cache: { mode: 'on', semantic: { enabled: false } },
        providers: { bedrock: { base_url: upstream.url, api_key: API_KEY } },
      });
    });
    afterAll(async () => {
      await cached?.stop();
    });

    /** The finish of the only choice, as the OpenAI SDK gives it, and the cache header. */
    async function ask(content: string, stream: boolean): Promise<{ finish: unknown; native: unknown; cache: string | null }> {
      const body = { model: MODEL, messages: [{ role: 'user' as const, content }] };
      if (!stream) {
        const { data, response } = await cached.client.chat.completions.create(body).withResponse();
        const choice = data.choices[0] as OpenAI.ChatCompletion.Choice & { native_finish_reason?: string };
        return { finish: choice.finish_reason, native: choice.native_finish_reason, cache: response.headers.get('x-tollgate-cache') };
      }
      const { data, response } = await cached.client.chat.completions.create({ ...body, stream: true }).withResponse();
      let finish: unknown = null;
      let native: unknown;
      for await (const chunk of data) {
        const choice = chunk.choices[0] as (OpenAI.ChatCompletionChunk.Choice & { native_finish_reason?: string }) | undefined;
        if (choice?.finish_reason) ({ finish_reason: finish, native_finish_reason: native } = choice);
      }
      return { finish, native, cache: response.headers.get('x-tollgate-cache') };
    }

    for (const stream of [false, true]) {
      it.each(['malformed_tool_use', 'malformed_model_output'])(`%s (stream: ${stream}) is told to the client and not cached`, async (reason) => {
        // Converse ends a turn whose output or tool call the model botched with these: no answer to keep or serve again.
        const mode = { kind: 'stop-reason' as const, stopReason: reason };
        upstream.enqueue(mode, mode);
        const content = `${reason} ${stream}`;
        const first = await ask(content, stream);
        // OpenAI's finish reasons have no word for it: `stop`, with Converse's reason beside it (as for Gemini's).
        expect(first).toMatchObject({ finish: 'stop', native: reason });
        await new Promise((resolve) => setTimeout(resolve, 100));
        expect((await ask(content, stream)).cache).not.toMatch(/^hit/);
        expect(upstream.calls).toHaveLength(2);
      });
    }
  });

  it('reports a stream cut before messageStop as failed', async () => {
    upstream.enqueue({ kind: 'truncate', afterEvents: 3 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'cut me off' }], stream: true });
    const error = await (async () => {
      for await (const chunk of stream) void chunk;
    })().then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
  });
});

describe('bedrock cost', () => {
  it('records the catalogue price of an answer with cache reads and writes', async () => {
    upstream.setCache({ read: 2000, write: 500 });
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'price this' }] });
    const usage = completion.usage as OpenAI.CompletionUsage & { prompt_tokens_details: { cached_tokens: number; cache_write_tokens: number } };
    expect(usage.prompt_tokens_details).toEqual({ cached_tokens: 2000, cache_write_tokens: 500 });
    expect(usage.prompt_tokens).toBeGreaterThan(2500);
    const expected = calcPrice(
      { input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, cache_read_tokens: 2000, cache_write_tokens: 500 },
      NATIVE_MODEL,
      { providerId: 'aws' },
    )?.total_price;
    expect(expected).toBeGreaterThan(0);
    const entry = await lastLog((e) => e.model === MODEL && e.prompt_tokens === usage.prompt_tokens);
    expect(Math.abs(entry.cost_usd - (expected ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });

  it('records the exact price of a stream whose client did not ask for usage', async () => {
    upstream.setCache({ read: 3000, write: 0 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'no usage for me' }], stream: true });
    for await (const chunk of stream) expect(chunk.usage ?? null).toBeNull();
    // The upstream's count (cache reads included), not the gateway's own estimate, which knows of no cache.
    const entry = await lastLog((e) => e.model === MODEL && e.stream === true && e.prompt_tokens > 3000);
    const expected = calcPrice({ input_tokens: entry.prompt_tokens, output_tokens: entry.completion_tokens, cache_read_tokens: 3000, cache_write_tokens: 0 }, NATIVE_MODEL, { providerId: 'aws' })?.total_price;
    expect(Math.abs(entry.cost_usd - (expected ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });

  it('records the catalogue price of a streamed answer', async () => {
    upstream.setCache({ read: 1000, write: 0 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'price this stream' }], stream: true, stream_options: { include_usage: true } });
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) if (chunk.usage) usage = chunk.usage;
    if (!usage) throw new Error('no usage chunk');
    const expected = calcPrice({ input_tokens: usage.prompt_tokens, output_tokens: usage.completion_tokens, cache_read_tokens: 1000, cache_write_tokens: 0 }, NATIVE_MODEL, { providerId: 'aws' })?.total_price;
    const entry = await lastLog((e) => e.model === MODEL && e.stream === true && e.prompt_tokens === usage?.prompt_tokens);
    expect(Math.abs(entry.cost_usd - (expected ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });
});

describe('bedrock embeddings through the gateway (InvokeModel)', () => {
  const TITAN = 'amazon.titan-embed-text-v2:0';
  const COHERE = 'cohere.embed-english-v3';
  /** What the client sees of an upstream vector after float32 base64 encoding and decoding. */
  const asFloat32 = (vector: number[]): number[] => Array.from(new Float32Array(vector));

  it('embeds several texts with Cohere Embed in one signed call, in input order, decoded by the client', async () => {
    const texts = ['the first document', 'a second one, a little longer', 'third'];
    const response = await tg.client.embeddings.create({ model: `bedrock/${COHERE}`, input: texts });
    expect(response.model).toBe(`bedrock/${COHERE}`);
    expect(response.data.map((item) => item.index)).toEqual([0, 1, 2]);
    texts.forEach((text, i) => {
      expect(response.data[i]?.embedding).toHaveLength(1024);
      expect(response.data[i]?.embedding).toEqual(asFloat32(bedrockEmbeddingVector(text, 1024)));
    });
    expect(upstream.calls).toHaveLength(1);
    const call = upstream.calls[0];
    expect(call?.path).toBe('/model/cohere.embed-english-v3/invoke');
    expect(call?.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDTESTBEDROCK\/\d{8}\/eu-west-1\/bedrock\/aws4_request/);
    expect(call?.body).toEqual({ texts, input_type: 'search_document', embedding_types: ['float'] });
    // Bedrock counts Cohere tokens only in a response header, so the gateway's tokenizer estimates them.
    const estimated = texts.reduce((sum, text) => sum + countTextTokens(text), 0);
    expect(response.usage).toEqual({ prompt_tokens: estimated, total_tokens: estimated });
    const entry = await lastLog((e) => e.model === `bedrock/${COHERE}` && e.prompt_tokens === estimated);
    expect(entry.status).toBe(200);
  });

  it('embeds one text with Titan V2, passing dimensions and recording its inputTextTokenCount', async () => {
    const text = 'titan, embed this sentence please';
    const response = await tg.client.embeddings.create({ model: `bedrock/${TITAN}`, input: [text], dimensions: 256, encoding_format: 'float' });
    expect(response.data).toHaveLength(1);
    expect(response.data[0]?.embedding).toHaveLength(256);
    for (const [i, value] of bedrockEmbeddingVector(text, 256).entries()) expect(response.data[0]?.embedding[i]).toBeCloseTo(value, 12);
    const call = upstream.calls[0];
    expect(call?.path).toBe('/model/amazon.titan-embed-text-v2%3A0/invoke');
    expect(call?.body).toEqual({ inputText: text, dimensions: 256, normalize: true });
    const tokens = bedrockEmbeddingTokens(text);
    expect(response.usage.prompt_tokens).toBe(tokens);
    const entry = await lastLog((e) => e.model === `bedrock/${TITAN}` && e.prompt_tokens === tokens);
    expect(entry.status).toBe(200);
  });

  it('embeds with a Bedrock API key as well', async () => {
    const response = await tg.client.embeddings.create({ model: `bedrockkey/${TITAN}`, input: 'with a key' });
    expect(response.data[0]?.embedding).toEqual(asFloat32(bedrockEmbeddingVector('with a key', 1024)));
    expect(upstream.calls[0]?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it('refuses several texts for Titan and token arrays before calling the upstream', async () => {
    const several = await failure(tg.client.embeddings.create({ model: `bedrock/${TITAN}`, input: ['one', 'two'] }));
    expect(several).toBeInstanceOf(OpenAI.BadRequestError);
    expect(several.message).toMatch(/one text per request/);
    const tokens = await failure(tg.client.embeddings.create({ model: `bedrock/${COHERE}`, input: [[1, 2, 3]] }));
    expect(tokens).toBeInstanceOf(OpenAI.BadRequestError);
    expect(tokens.message).toMatch(/token-array/);
    expect(upstream.calls).toHaveLength(0);
  });

  it('passes Bedrock\'s validation, throttling and signature errors on as typed errors', async () => {
    const dimensions = await failure(tg.client.embeddings.create({ model: `bedrock/${TITAN}`, input: 'x', dimensions: 300 }));
    expect(dimensions).toBeInstanceOf(OpenAI.BadRequestError);
    expect(dimensions.message).toMatch(/^400 Malformed input request: #\/dimensions: 300 is not a valid enum value/);

    const tooLong = await failure(tg.client.embeddings.create({ model: `bedrock/${COHERE}`, input: ['ok', 'y'.repeat(2049)] }));
    expect(tooLong).toBeInstanceOf(OpenAI.BadRequestError);
    expect(tooLong.message).toContain('#/texts/1: expected maxLength: 2048');

    upstream.enqueue({ kind: 'error', status: 429, errorType: 'ThrottlingException', message: 'Too many requests, please wait before trying again.', headers: { 'retry-after': '1' } });
    const throttled = await failure(tg.client.embeddings.create({ model: `bedrock/${COHERE}`, input: ['a'] }));
    expect(throttled).toBeInstanceOf(OpenAI.RateLimitError);
    expect(throttled.status).toBe(429);
    expect(throttled.message).toMatch(/^429 Too many requests/);

    const unsigned = await failure(tg.client.embeddings.create({ model: `wrongsecret/${TITAN}`, input: 'x' }));
    expect(unsigned).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(upstream.calls.map((call) => call.action)).toEqual(['invoke', 'invoke', 'invoke', 'invoke']);
  });
});
