import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { assertMatchesOpenAISchema, openAISchemaProvenance } from '../helpers/openai-schema.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startBedrockUpstream, type BedrockUpstream } from '../upstream/bedrock-upstream.js';
import { startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * What tollgate answers on its OpenAI routes, checked against OpenAI's own published schemas (openai-openapi,
 * vendored in test/fixtures/openai-schemas.json): completions and every stream chunk from an OpenAI upstream
 * and from each translated one, OpenAI's usage rules for streams, error bodies, embeddings and the models
 * endpoints. The official client makes every call; `.withResponse()` / `.asResponse()` give the exact JSON.
 */

const ACCESS_KEY = 'AKIDTESTBEDROCK';
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';

let openai: ScriptedUpstream;
let anthropic: AnthropicUpstream;
let gemini: GeminiUpstream;
let bedrock: BedrockUpstream;
let cohere: CohereUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  [openai, anthropic, gemini, bedrock, cohere] = await Promise.all([
    startOpenAIUpstream({ apiKey: 'sk-upstream' }),
    startAnthropicUpstream({ apiKey: 'sk-ant-upstream' }),
    startGeminiUpstream({ apiKey: 'gemini-key' }),
    startBedrockUpstream({ region: 'eu-west-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET }),
    startCohereUpstream({ apiKey: 'co-key' }),
  ]);
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream' },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      bedrock: { base_url: bedrock.url, api_key: `${ACCESS_KEY}:${SECRET}`, region: 'eu-west-1' },
      cohere: { base_url: `${cohere.url}/v2`, api_key: 'co-key' },
    },
    routes: { 'chat-default': { targets: [{ model: 'openai/gpt-4o-mini' }] } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), anthropic?.close(), gemini?.close(), bedrock?.close(), cohere?.close()]);
});

beforeEach(() => {
  openai.reset();
  anthropic.reset();
  gemini.reset();
  bedrock.reset();
  cohere.reset();
});

const UPSTREAMS = [
  { name: 'openai', model: 'openai/gpt-4o-mini' },
  { name: 'anthropic', model: 'anthropic/claude-haiku-4-5' },
  { name: 'gemini', model: 'gemini/gemini-2.5-flash' },
  { name: 'bedrock', model: 'bedrock/anthropic.claude-3-5-sonnet-20241022-v2:0' },
  { name: 'cohere', model: 'cohere/command-a-03-2025' },
] as const;

const lookup: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: { name: 'lookup', description: 'Looks a word up', parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] } },
};

type Json = Record<string, any>;

/** The data events of an SSE body, checked for OpenAI's framing: `data: <json>` events, ending with `data: [DONE]`. */
function sseChunks(body: string): Json[] {
  expect(body.endsWith('data: [DONE]\n\n')).toBe(true);
  const events = body.split('\n\n').filter((event) => event !== '');
  expect(events.pop()).toBe('data: [DONE]');
  return events.map((event) => {
    expect(event.startsWith('data: ')).toBe(true);
    expect(event.includes('\n')).toBe(false);
    return JSON.parse(event.slice('data: '.length)) as Json;
  });
}

async function streamChunks(params: OpenAI.ChatCompletionCreateParamsStreaming): Promise<Json[]> {
  const response = await tg.client.chat.completions.create(params).asResponse();
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
  const chunks = sseChunks(await response.text());
  for (const chunk of chunks) assertMatchesOpenAISchema('CreateChatCompletionStreamResponse', chunk);
  return chunks;
}

/** What the streamed deltas add up to: the text, the tool calls' names and arguments, the finish reason. */
function assembled(chunks: Json[]): { text: string; tools: Array<{ name: string; arguments: string }>; finish: string | null } {
  let text = '';
  const tools: Array<{ name: string; arguments: string }> = [];
  let finish: string | null = null;
  for (const chunk of chunks) {
    for (const choice of chunk.choices) {
      if (typeof choice.delta.content === 'string') text += choice.delta.content;
      for (const call of choice.delta.tool_calls ?? []) {
        const tool = (tools[call.index] ??= { name: '', arguments: '' });
        tool.name += call.function?.name ?? '';
        tool.arguments += call.function?.arguments ?? '';
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, tools, finish };
}

interface LogEntry {
  model: string;
  stream: boolean;
  prompt_tokens: number;
  completion_tokens: number;
}

/** The newest request log entry for `model`: without a key, the log entry is written just after the answer. */
async function latestLog(model: string, count: number): Promise<LogEntry> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    const logs = (await (await fetch(`${tg.url}/api/logs?limit=50`)).json()) as { data: LogEntry[] };
    const mine = logs.data.filter((entry) => entry.model === model);
    if (mine.length >= count && mine[0]) return mine[0];
    if (Date.now() > deadline) throw new Error(`fewer than ${count} log entries for ${model}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

it('checks against a known version of the vendored schemas', () => {
  expect(openAISchemaProvenance).toMatchObject({ commit: expect.stringMatching(/^[0-9a-f]{40}$/), version: expect.any(String) });
});

describe.each(UPSTREAMS)('chat completions from a $name upstream match OpenAI\'s schemas', ({ name, model }) => {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'describe the schema check' }];

  it('answers a completion, and a tool call, as a CreateChatCompletionResponse', async () => {
    const { data, response } = await tg.client.chat.completions.create({ model, messages, max_tokens: 50 }).withResponse();
    expect(response.status).toBe(200);
    assertMatchesOpenAISchema('CreateChatCompletionResponse', data);
    expect(data.model).toBe(model);
    expect(data.choices[0]?.message.content).toEqual(expect.any(String));

    const called = await tg.client.chat.completions.create({ model, messages, tools: [lookup], tool_choice: { type: 'function', function: { name: 'lookup' } } }).withResponse();
    assertMatchesOpenAISchema('CreateChatCompletionResponse', called.data);
    expect(called.data.choices[0]?.message.tool_calls?.[0]).toMatchObject({ type: 'function', function: { name: 'lookup' } });
  });

  it('streams without include_usage: every chunk valid, with choices, and no usage key anywhere', async () => {
    const chunks = await streamChunks({ model, messages, stream: true });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks) {
      expect(chunk).not.toHaveProperty('usage');
      expect(chunk.choices.length).toBeGreaterThan(0);
      expect(chunk.model).toBe(model);
    }
    const { text, finish } = assembled(chunks);
    expect(text).not.toBe('');
    expect(finish).toBe('stop');
  });

  it('streams with include_usage: usage null on every chunk, then one last chunk with no choices and the usage', async () => {
    const chunks = await streamChunks({ model, messages, stream: true, stream_options: { include_usage: true } });
    const last = chunks.at(-1) as Json;
    const rest = chunks.slice(0, -1);
    expect(rest.length).toBeGreaterThan(1);
    for (const chunk of rest) {
      expect(chunk).toHaveProperty('usage', null);
      expect(chunk.choices.length).toBeGreaterThan(0);
    }
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number), total_tokens: expect.any(Number) });
    expect(last.usage.prompt_tokens).toBeGreaterThan(0);
    expect(last.usage.completion_tokens).toBeGreaterThan(0);
    expect(last.id).toBe(chunks[0]?.id);
    expect(last.model).toBe(model);
    expect(assembled(rest).finish).toBe('stop');

    // An OpenAI upstream sends no usage unless asked (the gateway then counts the tokens itself), so only a
    // translated stream, whose upstream always reports usage, shows that what the client was not shown is recorded.
    if (name === 'openai') return;
    await latestLog(model, 1);
    const withoutUsage = await streamChunks({ model, messages, stream: true });
    expect(withoutUsage.some((chunk) => 'usage' in chunk)).toBe(false);
    const logged = await latestLog(model, 2).then(async (entry) => (entry.stream ? entry : latestLog(model, 2)));
    expect({ prompt: logged.prompt_tokens, completion: logged.completion_tokens }).toEqual({ prompt: last.usage.prompt_tokens, completion: last.usage.completion_tokens });
  });

  it('streams a tool call with both usage settings in valid chunks', async () => {
    for (const usage of [false, true]) {
      const chunks = await streamChunks({
        model,
        messages,
        stream: true,
        tools: [lookup],
        tool_choice: { type: 'function', function: { name: 'lookup' } },
        ...(usage ? { stream_options: { include_usage: true } } : {}),
      });
      const { tools, finish } = assembled(chunks);
      expect(tools[0]?.name).toBe('lookup');
      expect(() => JSON.parse(tools[0]?.arguments ?? '')).not.toThrow();
      expect(['tool_calls', 'stop']).toContain(finish);
      expect(chunks.at(-1)?.choices.length === 0).toBe(usage);
      expect(chunks.some((chunk) => 'usage' in chunk)).toBe(usage);
    }
  });
});

/** A request sent with fetch, for bodies the official client would never send; the error body as JSON. */
async function rawPost(path: string, body: string): Promise<{ status: number; body: Json }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: response.status, body: (await response.json()) as Json };
}

/** The error the official client raised, with the exact body the gateway sent. */
async function clientError(promise: PromiseLike<unknown>): Promise<{ status: number; body: Json }> {
  const error = await Promise.resolve(promise).then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  const apiError = error as InstanceType<typeof OpenAI.APIError>;
  // The client keeps the `error` object of the body; the whole body is `{ error }`, as OpenAI sends it.
  return { status: apiError.status ?? 0, body: { error: apiError.error } };
}

describe('error bodies match ErrorResponse', () => {
  it('400 invalid_json', async () => {
    const { status, body } = await rawPost('/v1/chat/completions', '{"model": "openai/gpt-4o-mini", ');
    expect(status).toBe(400);
    assertMatchesOpenAISchema('ErrorResponse', body);
    expect(body.error.code).toBe('invalid_json');
  });

  it('400 for a request the gateway refuses, and 404 for an unknown model or provider', async () => {
    const missing = await rawPost('/v1/chat/completions', JSON.stringify({ model: 'openai/gpt-4o-mini' }));
    expect(missing.status).toBe(400);
    assertMatchesOpenAISchema('ErrorResponse', missing.body);
    for (const model of ['surely-not-a-model-xyz', 'no-such-provider/model']) {
      const { status, body } = await clientError(tg.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'x' }] }));
      expect(status).toBe(404);
      assertMatchesOpenAISchema('ErrorResponse', body);
    }
  });

  it('upstream 4xx and 5xx from each upstream, in OpenAI\'s shape', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'fail please' }];
    const cases: Array<{ model: string; arm: () => void; status: number }> = [
      { model: 'openai/gpt-4o-mini', arm: () => openai.enqueue({ kind: 'error', status: 429, type: 'requests', code: 'rate_limit_exceeded', message: 'Slow down.' }), status: 429 },
      { model: 'openai/gpt-4o-mini', arm: () => openai.enqueue({ kind: 'error', status: 500 }), status: 500 },
      { model: 'anthropic/claude-haiku-4-5', arm: () => anthropic.enqueue({ kind: 'error', status: 400, type: 'invalid_request_error', message: 'max_tokens: too large' }), status: 400 },
      { model: 'anthropic/claude-haiku-4-5', arm: () => anthropic.enqueue({ kind: 'error', status: 529, type: 'overloaded_error', message: 'Overloaded' }), status: 529 },
      { model: 'gemini/gemini-2.5-flash', arm: () => gemini.enqueue({ kind: 'error', status: 400, message: 'Invalid value at contents' }), status: 400 },
      { model: 'gemini/gemini-2.5-flash', arm: () => gemini.enqueue({ kind: 'error', status: 503, message: 'The model is overloaded.' }), status: 503 },
      { model: UPSTREAMS[3].model, arm: () => bedrock.enqueue({ kind: 'error', status: 400, errorType: 'ValidationException', message: 'Malformed input request.' }), status: 400 },
      { model: UPSTREAMS[3].model, arm: () => bedrock.enqueue({ kind: 'error', status: 500, errorType: 'InternalServerException', message: 'Internal error.' }), status: 500 },
      { model: 'cohere/command-a-03-2025', arm: () => cohere.enqueue({ kind: 'error', status: 422, message: 'invalid request: messages is empty' }), status: 422 },
      { model: 'cohere/command-a-03-2025', arm: () => cohere.enqueue({ kind: 'error', status: 500 }), status: 500 },
    ];
    for (const { model, arm, status: upstreamStatus } of cases) {
      arm();
      const { status, body } = await clientError(tg.client.chat.completions.create({ model, messages }));
      expect({ model, upstreamStatus, ok: status >= 400 && status < 600 }).toEqual({ model, upstreamStatus, ok: true });
      assertMatchesOpenAISchema('ErrorResponse', body);
      expect(body.error.message).not.toBe('');
    }
  });

  it('an error inside an open translated stream is an ErrorResponse event', async () => {
    // After the first words (frame 3): an error before them finds the client with nothing yet, and is a status.
    anthropic.enqueue({ kind: 'stream-error', after: 4, type: 'overloaded_error', message: 'Overloaded' });
    const response = await tg.client.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'stream then fail' }], stream: true }).asResponse();
    const events = (await response.text()).split('\n\n').filter((event) => event !== '');
    const last = JSON.parse((events.at(-1) as string).slice('data: '.length)) as Json;
    assertMatchesOpenAISchema('ErrorResponse', last);
    for (const event of events.slice(0, -1)) assertMatchesOpenAISchema('CreateChatCompletionStreamResponse', JSON.parse(event.slice('data: '.length)));
  });
});

describe('embeddings match CreateEmbeddingResponse', () => {
  it.each([['openai/text-embedding-3-small'], ['gemini/gemini-embedding-001'], ['bedrock/cohere.embed-english-v3'], ['cohere/embed-v4.0']])('%s, as float and as base64', async (model) => {
    const input = ['one text', 'another text'];
    const float = (await tg.client.embeddings.create({ model, input, encoding_format: 'float' }).asResponse().then((response) => response.json())) as Json;
    assertMatchesOpenAISchema('CreateEmbeddingResponse', float);
    expect(float.model).toBe(model);
    expect(float.data.map((item: Json) => item.index)).toEqual([0, 1]);

    // OpenAI answers `encoding_format: base64` with each vector as a base64 string of little-endian float32s; its
    // published schema describes only the float form, so the vectors are decoded before the body is checked.
    const base64 = (await tg.client.embeddings.create({ model, input, encoding_format: 'base64' }).asResponse().then((response) => response.json())) as Json;
    const decoded = base64.data.map((item: Json) => {
      expect(typeof item.embedding).toBe('string');
      const bytes = Buffer.from(item.embedding as string, 'base64');
      return { ...item, embedding: Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4)) };
    });
    assertMatchesOpenAISchema('CreateEmbeddingResponse', { ...base64, data: decoded });
    expect(decoded.map((item: Json) => item.embedding.length)).toEqual(float.data.map((item: Json) => item.embedding.length));
  });
});

describe('models match ListModelsResponse and Model', () => {
  it('lists, filtered and not, on every OpenAI mount', async () => {
    for (const path of ['/v1/models', '/models', '/litellm/models', '/v1/models?provider=anthropic']) {
      const response = await fetch(`${tg.url}${path}`);
      const body = (await response.json()) as Json;
      assertMatchesOpenAISchema('ListModelsResponse', body);
      expect(body.data.length).toBeGreaterThan(0);
    }
    const { data } = await tg.client.models.list().withResponse();
    assertMatchesOpenAISchema('ListModelsResponse', { object: 'list', data: data.data });
  });

  it('retrieves a listed model, a route name and an id with a slash as a Model; an unknown one is a 404 ErrorResponse', async () => {
    for (const id of ['openai/gpt-4o-mini', 'anthropic/claude-haiku-4-5', 'chat-default']) {
      const { data, response } = await tg.client.models.retrieve(id).withResponse();
      expect(response.status).toBe(200);
      assertMatchesOpenAISchema('Model', data);
      expect(data.id).toBe(id);
    }
    const { status, body } = await clientError(tg.client.models.retrieve('openai/not-a-model'));
    expect(status).toBe(404);
    assertMatchesOpenAISchema('ErrorResponse', body);
    expect(body.error.code).toBe('model_not_found');
  });
});
