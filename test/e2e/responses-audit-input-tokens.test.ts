// OpenAI's "Get input token counts" (`POST /v1/responses/input_tokens`, the SDK's `client.responses.inputTokens.count`)
// through the gateway: OpenAI counts its own models (the client's body, passed through); Anthropic counts Claude's
// (the Responses request translated into a count_tokens body); every other model is estimated with tollgate's
// tokenizer. The key rules, the 400s and 404s are those of /v1/responses, in OpenAI's error shape.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { inputTokensOf } from '../upstream/openai-responses-api.js';

const CLAUDE = 'anthropic/claude-sonnet-4-5';
const GEMINI = 'gemini/gemini-2.5-flash';
const GPT = 'openai/gpt-5';

/** The fields Anthropic's count_tokens takes; it refuses any other (max_tokens, stream, temperature, ...). */
const COUNT_FIELDS = new Set(['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config', 'cache_control', 'speed']);

interface CountServer {
  url: string;
  calls: Array<{ path: string; headers: Record<string, unknown>; body: any }>;
  /** The next answers: a status and body each (else the count of the body's words). */
  queue: Array<{ status: number; body: string }>;
  server: Server;
}

/** Anthropic's count_tokens, scripted: Anthropic's refusal of a field it does not take, else 7 tokens a message and one a word. */
async function startAnthropicCounter(): Promise<CountServer> {
  const counter: CountServer = { url: '', calls: [], queue: [], server: null as unknown as Server };
  counter.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      counter.calls.push({ path: req.url ?? '', headers: req.headers, body });
      const send = (status: number, text: string): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(text);
      };
      const next = counter.queue.shift();
      if (next) return send(next.status, next.body);
      const extra = Object.keys(body).find((key) => !COUNT_FIELDS.has(key));
      if (extra) return send(400, JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: `${extra}: Extra inputs are not permitted` } }));
      const text = JSON.stringify(body.messages) + JSON.stringify(body.system ?? '') + JSON.stringify(body.tools ?? '');
      send(200, JSON.stringify({ input_tokens: 7 * body.messages.length + text.split(/\s+/).length }));
    });
  });
  await new Promise<void>((resolve) => counter.server.listen(0, '127.0.0.1', resolve));
  counter.url = `http://127.0.0.1:${(counter.server.address() as AddressInfo).port}`;
  return counter;
}

let counter: CountServer;
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let client: OpenAI;

beforeAll(async () => {
  counter = await startAnthropicCounter();
  gemini = await startGeminiUpstream({ apiKey: 'gemini-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${counter.url}/v1`, api_key: 'sk-ant-counter' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
    routes: { 'mixed-route': { targets: [{ model: CLAUDE }, { model: GEMINI }] } },
  });
  client = tg.client;
});
afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await openai?.close();
  await new Promise((resolve) => counter?.server.close(resolve));
});
beforeEach(() => {
  counter.calls.length = 0;
  counter.queue.length = 0;
  gemini.reset();
  openai.reset();
});

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

/** The error a call failed with: its status and OpenAI error object. */
async function failure(call: Promise<unknown>): Promise<{ status: number | undefined; error: any }> {
  const err = await call.then(
    () => {
      throw new Error('the call succeeded');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return { status: (err as InstanceType<typeof OpenAI.APIError>).status, error: (err as InstanceType<typeof OpenAI.APIError>).error };
}

describe('POST /v1/responses/input_tokens', () => {
  it('OpenAI counts its own models: the client’s body passed through, its answer as it wrote it', async () => {
    const params = { model: GPT, instructions: 'Be brief.', input: 'how many tokens is this question', tools: [weather] };
    const counted = await client.responses.inputTokens.count(params);
    expect(counted).toEqual({ object: 'response.input_tokens', input_tokens: inputTokensOf(params) });
    const call = openai.calls.at(-1);
    expect(call?.path).toBe('/v1/responses/input_tokens');
    expect(call?.headers.authorization).toBe('Bearer sk-openai-upstream');
    expect(call?.body).toEqual({ ...params, model: 'gpt-5' });
  });

  it('OpenAI’s refusal reaches the client with its status and message', async () => {
    const { status, error } = await failure(client.responses.inputTokens.count({ model: GPT, input: 'hi', previous_response_id: `resp_${'0'.repeat(48)}` }));
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'previous_response_not_found', param: 'previous_response_id' });
  });

  it('Anthropic counts Claude: the request translated into a count_tokens body', async () => {
    const counted = await client.responses.inputTokens.count({ model: CLAUDE, instructions: 'Be brief.', input: [{ role: 'user', content: 'what is the weather in Paris' }], tools: [weather], tool_choice: 'auto' });
    expect(counted.object).toBe('response.input_tokens');
    const call = counter.calls.at(-1);
    expect(call?.path).toBe('/v1/messages/count_tokens');
    expect(call?.headers['x-api-key']).toBe('sk-ant-counter');
    expect(call?.headers['anthropic-version']).toBeDefined();
    expect(call?.body).toMatchObject({
      model: 'claude-sonnet-4-5',
      system: 'Be brief.',
      messages: [{ role: 'user', content: 'what is the weather in Paris' }],
      tools: [{ name: 'weather', description: 'Weather for a city', input_schema: weather.parameters }],
      tool_choice: { type: 'auto' },
    });
    expect(Object.keys(call?.body ?? {}).every((key) => COUNT_FIELDS.has(key))).toBe(true);
    // The count is Anthropic's.
    const text = JSON.stringify(call?.body.messages) + JSON.stringify(call?.body.system) + JSON.stringify(call?.body.tools);
    expect(counted.input_tokens).toBe(7 + text.split(/\s+/).length);
  });

  it('Anthropic’s refusal is an OpenAI-shaped error with its status and message', async () => {
    counter.queue.push({ status: 400, body: JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'messages: something Claude refused' } }) });
    const { status, error } = await failure(client.responses.inputTokens.count({ model: CLAUDE, input: 'hi' }));
    expect(status).toBe(400);
    expect(error.message).toContain('something Claude refused');
  });

  it('other providers and routes are estimated with tollgate’s tokenizer, calling no upstream', async () => {
    const short = await client.responses.inputTokens.count({ model: GEMINI, input: 'hello there' });
    const long = await client.responses.inputTokens.count({ model: GEMINI, input: 'hello there, this question is a good deal longer than the first one was', instructions: 'Answer in French.' });
    expect(short.object).toBe('response.input_tokens');
    expect(short.input_tokens).toBeGreaterThan(2);
    expect(long.input_tokens).toBeGreaterThan(short.input_tokens + 10);
    const routed = await client.responses.inputTokens.count({ model: 'mixed-route', input: 'hello there' });
    expect(routed.input_tokens).toBe(short.input_tokens);
    expect(gemini.calls).toHaveLength(0);
    expect(counter.calls).toHaveLength(0);
  });

  it('a previous_response_id tollgate kept counts the whole conversation; another caller’s is not found', async () => {
    const first = await client.responses.create({ model: GEMINI, input: 'remember the number forty two and the colour blue' });
    const alone = await client.responses.inputTokens.count({ model: GEMINI, input: 'what was it?' });
    const continued = await client.responses.inputTokens.count({ model: GEMINI, input: 'what was it?', previous_response_id: first.id });
    expect(continued.input_tokens).toBeGreaterThan(alone.input_tokens + 10);
    // Sent to Claude, the conversation reaches Anthropic's count whole.
    await client.responses.inputTokens.count({ model: CLAUDE, input: 'what was it?', previous_response_id: first.id });
    expect(counter.calls.at(-1)?.body.messages.map((message: any) => message.role)).toEqual(['user', 'assistant', 'user']);

    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'other-caller' });
    const other = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: created.body.key, maxRetries: 0 });
    const { status, error } = await failure(other.responses.inputTokens.count({ model: GEMINI, input: 'what was it?', previous_response_id: first.id }));
    expect(status).toBe(400);
    expect(error).toMatchObject({ code: 'previous_response_not_found', param: 'previous_response_id' });
  });

  it('the key rules of /v1/responses: an unknown key is 401, a model the key may not use 403, the same errors', async () => {
    const unknown = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'tg-not-a-key', maxRetries: 0 });
    const counted = await failure(unknown.responses.inputTokens.count({ model: GEMINI, input: 'hi' }));
    const created = await failure(unknown.responses.create({ model: GEMINI, input: 'hi' }));
    expect(counted.status).toBe(401);
    expect(counted).toEqual(created);

    const key = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'gemini-only', models: [GEMINI] });
    const limited = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.body.key, maxRetries: 0 });
    expect((await limited.responses.inputTokens.count({ model: GEMINI, input: 'hi' })).input_tokens).toBeGreaterThan(0);
    const refused = await failure(limited.responses.inputTokens.count({ model: GPT, input: 'hi' }));
    const refusedCreate = await failure(limited.responses.create({ model: GPT, input: 'hi' }));
    expect(refused.status).toBe(403);
    expect(refused).toEqual(refusedCreate);
    expect(openai.calls).toHaveLength(0);
  });

  it('the 400s and 404s of /v1/responses, before any upstream call', async () => {
    const cases: Array<Record<string, unknown>> = [
      { input: 'no model' },
      { model: 'nowhere/some-model', input: 'hi' },
      { model: GEMINI, input: 'hi', tools: [{ type: 'web_search' }] },
      { model: GEMINI, input: 42 },
    ];
    for (const body of cases) {
      const counted = await failure(client.responses.inputTokens.count(body as OpenAI.Responses.InputTokenCountParams));
      const created = await failure(client.responses.create(body as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming));
      expect(counted).toEqual(created);
      expect([400, 404]).toContain(counted.status);
    }
    expect(gemini.calls).toHaveLength(0);
  });

  it('a body an input guardrail may block or redact is estimated, never sent upstream', async () => {
    const key = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'redacting', guardrails: { rules: [{ name: 'cards', kind: 'payment_card', action: 'redact', applies_to: 'input' }] } });
    const guarded = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.body.key, maxRetries: 0 });
    const counted = await guarded.responses.inputTokens.count({ model: CLAUDE, input: 'my card is 4111 1111 1111 1111' });
    expect(counted.input_tokens).toBeGreaterThan(5);
    await guarded.responses.inputTokens.count({ model: GPT, input: 'my card is 4111 1111 1111 1111' });
    // What only OpenAI takes (a built-in tool) is left out of the estimate for an OpenAI model, not refused.
    await guarded.responses.inputTokens.count({ model: GPT, input: 'my card is 4111 1111 1111 1111', tools: [{ type: 'web_search' }] });
    expect(counter.calls).toHaveLength(0);
    expect(openai.calls).toHaveLength(0);
  });

  it('is no model call: neither an answered nor a failed count is in the request log (as /anthropic count_tokens)', async () => {
    const before = (await jsonRequest(tg.url, 'GET', '/api/logs?limit=100')).body.data.length;
    await client.responses.inputTokens.count({ model: GEMINI, input: 'hi' });
    await failure(client.responses.inputTokens.count({ model: 'nowhere/some-model', input: 'hi' }));
    counter.queue.push({ status: 429, body: JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Number of count_tokens requests has exceeded your rate limit.' } }) });
    expect((await failure(client.responses.inputTokens.count({ model: CLAUDE, input: 'hi' }))).status).toBe(429);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const logs = (await jsonRequest(tg.url, 'GET', '/api/logs?limit=100')).body.data as Array<{ path?: string }>;
    expect(logs).toHaveLength(before);
    expect(logs.some((entry) => entry.path?.includes('input_tokens'))).toBe(false);
  });
});
