import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAnthropic } from '@ai-sdk/anthropic';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, streamText } from 'ai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { countPromptTokens } from '../../src/tokens/tokenizer.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const MODEL = 'claude-haiku-4-5';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/**
 * Anthropic's count_tokens endpoint, which the scripted Messages upstream does not serve: it answers 17 for
 * any body, and 429 in Anthropic's shape for the model `limited`.
 */
interface CountServer {
  url: string;
  calls: Array<{ path: string; headers: IncomingMessage['headers']; body: any }>;
  server: Server;
}

async function startCountServer(): Promise<CountServer> {
  const calls: CountServer['calls'] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (part: Buffer) => (raw += part.toString('utf8')));
    req.on('end', () => {
      const body = JSON.parse(raw);
      calls.push({ path: req.url ?? '', headers: req.headers, body });
      if (body.model === 'limited') {
        res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
        res.end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'Too many counts' } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ input_tokens: 17 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, server };
}

let upstream: AnthropicUpstream;
let openai: ScriptedUpstream;
let counter: CountServer;
let tg: RunningGateway;
let client: Anthropic;

beforeAll(async () => {
  upstream = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  counter = await startCountServer();
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } }, forward_headers: ['x-trace-tag'] },
    providers: {
      // $1 per token in and out, so a key's spend is its token count.
      anthropic: { base_url: `${upstream.url}/v1`, api_key: 'sk-ant-upstream', prices: { [MODEL]: { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } } },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      counted: { type: 'anthropic', base_url: `${counter.url}/v1`, api_key: 'sk-ant-counter' },
      // The operator pins a beta on this provider: theirs wins over the client's, on messages and counts alike.
      pinned: { type: 'anthropic', base_url: `${counter.url}/v1`, api_key: 'sk-ant-counter', headers: { 'Anthropic-Beta': 'operator-beta' } },
    },
  });
  client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
  await openai?.close();
  await new Promise((resolve) => counter?.server.close(resolve));
});

beforeEach(() => {
  upstream.reset();
  counter.calls.length = 0;
});

function lastCall() {
  const call = upstream.calls.at(-1);
  if (!call) throw new Error('upstream saw no call');
  return call;
}

async function failure(promise: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  const error = await promise.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(Anthropic.APIError);
  return error as InstanceType<typeof Anthropic.APIError>;
}

/** The raw stream as a client without an SDK sees it: the event names in order, and the parsed data of each. */
async function rawStream(body: Record<string, unknown>, apiKey = 'client-side-key'): Promise<{ response: Response; events: Array<{ event: string; data: any }> }> {
  const response = await fetch(`${tg.url}/anthropic/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const text = await response.text();
  const events = text
    .split('\n\n')
    .filter((frame) => frame.trim() !== '')
    .map((frame) => {
      const [eventLine, dataLine] = frame.split('\n');
      return { event: (eventLine ?? '').replace(/^event: /, ''), data: JSON.parse((dataLine ?? '').replace(/^data: /, '')) };
    });
  return { response, events };
}

const weather: Anthropic.Tool = {
  name: 'weather',
  description: 'Weather for a city',
  input_schema: { type: 'object', properties: { query: { type: 'string' }, units: { type: 'string' } } },
};

describe('messages with the official Anthropic SDK', () => {
  it('answers a text request with a system prompt through the anthropic provider', async () => {
    // This SDK version's types leave the sampling fields out; the API still takes them.
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 200,
      system: 'be brief',
      messages: [{ role: 'user', content: 'hello claude' }],
      temperature: 0.2,
      metadata: { user_id: 'user-7' },
    } as Anthropic.MessageCreateParamsNonStreaming);
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: MODEL,
      content: [{ type: 'text', text: 'echo: hello claude' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
    });
    expect(message.id).toMatch(/^msg_/);
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(message._request_id).toBeTruthy();
    const call = lastCall();
    expect(call.body).toEqual({
      model: MODEL,
      max_tokens: 200,
      system: 'be brief',
      messages: [{ role: 'user', content: 'hello claude' }],
      temperature: 0.2,
      metadata: { user_id: 'user-7' },
    });
    // The client's key stays at the gateway; the upstream gets the configured one.
    expect(call.headers['x-api-key']).toBe('sk-ant-upstream');
    expect(JSON.stringify(call.headers)).not.toContain('client-side-key');
  });

  it('passes stop_sequences on and returns the answer cut at the sequence', async () => {
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 200,
      stop_sequences: ['STOP'],
      messages: [{ role: 'user', content: 'one two STOP three' }],
    });
    expect(lastCall().body.stop_sequences).toEqual(['STOP']);
    expect(message.content).toEqual([{ type: 'text', text: 'echo: one two ' }]);
    // Anthropic behind Anthropic: which sequence stopped the answer survives the canonical shape.
    expect(message).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
    const streamed = await client.messages
      .stream({ model: MODEL, max_tokens: 200, stop_sequences: ['STOP'], messages: [{ role: 'user', content: 'one two STOP three' }] })
      .finalMessage();
    expect(streamed).toMatchObject({ stop_reason: 'stop_sequence', stop_sequence: 'STOP' });
  });

  it('streams with messages.stream: text events and a final message with usage', async () => {
    const stream = client.messages.stream({ model: MODEL, max_tokens: 200, messages: [{ role: 'user', content: 'stream me please' }] });
    const pieces: string[] = [];
    stream.on('text', (text) => pieces.push(text));
    const final = await stream.finalMessage();
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe('echo: stream me please');
    expect(final).toMatchObject({ model: MODEL, stop_reason: 'end_turn', content: [{ type: 'text', text: 'echo: stream me please' }] });
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(lastCall().body.stream).toBe(true);
  });

  it('streams with create({ stream: true }) as typed events', async () => {
    const stream = await client.messages.create({ model: MODEL, max_tokens: 200, stream: true, messages: [{ role: 'user', content: 'hi there' }] });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    }
    expect(text).toBe('echo: hi there');
    expect(types[0]).toBe('message_start');
    expect(types.at(-1)).toBe('message_stop');
  });

  it('sends the exact Anthropic event sequence on the wire', async () => {
    const { response, events } = await rawStream({ model: MODEL, max_tokens: 200, messages: [{ role: 'user', content: 'hi there' }] });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(response.headers.get('request-id')).toBeTruthy();
    // An Anthropic upstream's own sequence, passed through: its ping comes after the first block opened.
    expect(events.map((e) => e.event)).toEqual([
      'message_start', 'content_block_start', 'ping', 'content_block_delta', 'content_block_delta', 'content_block_delta',
      'content_block_stop', 'message_delta', 'message_stop',
    ]);
    for (const { event, data } of events) expect(data.type).toBe(event);
    expect(events[0]?.data.message).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, content: [] });
    expect(events.at(-2)?.data).toMatchObject({ delta: { stop_reason: 'end_turn', stop_sequence: null } });
    expect(events.at(-2)?.data.usage.output_tokens).toBeGreaterThan(0);
  });

  it('carries a tool round trip: tool_use out, tool_result back', async () => {
    const first = await client.messages.create({
      model: MODEL,
      max_tokens: 300,
      tools: [weather],
      messages: [{ role: 'user', content: 'use the tool for Oslo' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const toolUse = first.content.find((block) => block.type === 'tool_use');
    expect(toolUse).toMatchObject({ type: 'tool_use', name: 'weather', input: { query: 'use the tool for Oslo', units: 'metric' } });
    if (toolUse?.type !== 'tool_use') throw new Error('no tool_use block');
    expect(lastCall().body.tools).toEqual([weather]);

    const second = await client.messages.create({
      model: MODEL,
      max_tokens: 300,
      tools: [weather],
      messages: [
        { role: 'user', content: 'use the tool for Oslo' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18 degrees' }] },
      ],
    });
    expect(second.content).toEqual([{ type: 'text', text: 'echo: tool said 18 degrees' }]);
    expect(second.stop_reason).toBe('end_turn');
    const sent = lastCall().body.messages;
    expect(sent[1]).toEqual({ role: 'assistant', content: [{ type: 'tool_use', id: toolUse.id, name: 'weather', input: toolUse.input }] });
    expect(sent[2]).toEqual({ role: 'user', content: [{ type: 'tool_result', tool_use_id: toolUse.id, content: '18 degrees' }] });
  });

  it('streams a tool call: the SDK assembles the input from the forwarded JSON fragments', async () => {
    const stream = client.messages.stream({
      model: MODEL,
      max_tokens: 300,
      tools: [weather],
      tool_choice: { type: 'tool', name: 'weather' },
      messages: [{ role: 'user', content: 'Bergen' }],
    });
    const fragments: string[] = [];
    stream.on('inputJson', (partial) => fragments.push(partial));
    const final = await stream.finalMessage();
    // As Anthropic streams them (passed through): an empty fragment first, then the input in three pieces.
    expect(fragments).toHaveLength(4);
    expect(fragments[0]).toBe('');
    expect(final.stop_reason).toBe('tool_use');
    expect(final.content).toEqual([{ type: 'tool_use', id: expect.stringMatching(/^toolu_/), name: 'weather', input: { query: 'Bergen', units: 'metric' } }]);
    expect(lastCall().body.tool_choice).toEqual({ type: 'tool', name: 'weather' });
  });

  it('delivers image blocks to the upstream', async () => {
    await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
            { type: 'text', text: 'describe' },
          ],
        },
      ],
    });
    expect(lastCall().body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
          { type: 'text', text: 'describe' },
        ],
      },
    ]);
  });

  it('passes extended thinking on and returns the thinking block', async () => {
    const message = await client.messages.create({
      model: MODEL,
      max_tokens: 2000,
      thinking: { type: 'enabled', budget_tokens: 1024 },
      messages: [{ role: 'user', content: 'ponder this' }],
    });
    expect(lastCall().body.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'thinking about: ponder this' });
    expect(message.content[1]).toEqual({ type: 'text', text: 'echo: ponder this' });
  });
});

describe('count_tokens', () => {
  it('asks Anthropic for Anthropic-format models, with the configured key and the upstream model name', async () => {
    const count = await client.messages.countTokens({ model: 'counted/claude-x', system: 'sys', messages: [{ role: 'user', content: 'count me' }] });
    expect(count).toEqual({ input_tokens: 17 });
    expect(counter.calls).toHaveLength(1);
    expect(counter.calls[0]).toMatchObject({
      path: '/v1/messages/count_tokens',
      // The client's anthropic-version goes along, as on messages (see the next test).
      headers: { 'x-api-key': 'sk-ant-counter', 'anthropic-version': expect.any(String) },
      body: { model: 'claude-x', system: 'sys', messages: [{ role: 'user', content: 'count me' }] },
    });
  });

  it('sends the count the headers a message would get: the client’s version and betas, the forward_headers, the operator’s own first', async () => {
    const count = await client.beta.messages.countTokens(
      { model: 'counted/claude-x', messages: [{ role: 'user', content: 'count me' }], betas: ['files-api-2025-04-14', 'context-1m-2025-08-07'] },
      { headers: { 'anthropic-version': '2099-01-01', 'x-trace-tag': 'abc' } },
    );
    expect(count).toEqual({ input_tokens: 17 });
    expect(counter.calls[0]?.headers).toMatchObject({ 'anthropic-version': '2099-01-01', 'anthropic-beta': 'files-api-2025-04-14,context-1m-2025-08-07,token-counting-2024-11-01', 'x-trace-tag': 'abc' });
    await client.beta.messages.countTokens({ model: 'pinned/claude-x', messages: [{ role: 'user', content: 'count me' }], betas: ['files-api-2025-04-14'] });
    // One spelling of the header, the operator's value (README: "a header the operator set on the provider wins over the client's").
    expect(counter.calls[1]?.headers['anthropic-beta']).toBe('operator-beta');
    expect(counter.calls[1]?.headers['x-api-key']).toBe('sk-ant-counter');
  });

  it('translates an upstream count error into Anthropic errors', async () => {
    const error = await failure(client.messages.countTokens({ model: 'counted/limited', messages: [{ role: 'user', content: 'x' }] }));
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(error.headers?.get('retry-after')).toBe('7');
  });

  it('estimates with the gateway tokenizer for other providers', async () => {
    const messages = [{ role: 'user' as const, content: 'how many tokens are in this sentence?' }];
    const count = await client.messages.countTokens({ model: 'openai/gpt-4o-mini', system: 'be brief', messages, tools: [weather] });
    const tools = [{ type: 'function', function: { name: 'weather', description: 'Weather for a city', parameters: weather.input_schema } }];
    expect(count.input_tokens).toBe(countPromptTokens([{ role: 'system', content: 'be brief' }, ...messages], tools));
    expect(counter.calls).toHaveLength(0);
  });

  it('counts the text of a plain-text document, as the same text sent as a text block', async () => {
    // A long document is most of such a prompt: counted as nothing, a key's token limits and budget hold saw none of it.
    const text = 'The launch moved to May, and the budget was cut by a third. '.repeat(200);
    const question = { type: 'text' as const, text: 'When is the launch?' };
    const asDocument = await client.messages.countTokens({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: text } }, question] }],
    });
    const asText = await client.messages.countTokens({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: [{ type: 'text', text }, question] }] });
    expect(asText.input_tokens).toBeGreaterThan(2000);
    expect(asDocument.input_tokens).toBe(asText.input_tokens);
  });

  it('refuses unknown virtual keys and unknown providers', async () => {
    const stranger = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'tg-not-a-real-key', maxRetries: 0 });
    expect(await failure(stranger.messages.countTokens({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }))).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(await failure(client.messages.countTokens({ model: 'nope/model', messages: [{ role: 'user', content: 'x' }] }))).toBeInstanceOf(Anthropic.NotFoundError);
  });
});

describe('errors in Anthropic shape', () => {
  it('answers an unknown tg- key with 401 authentication_error', async () => {
    const stranger = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'tg-not-a-real-key', maxRetries: 0 });
    const error = await failure(stranger.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(error).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(error.status).toBe(401);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'authentication_error', message: expect.stringContaining('virtual key') } });
    expect(error.requestID).toBeTruthy();
    expect(upstream.calls).toHaveLength(0);
  });

  it('passes an upstream 429 on as a RateLimitError with retry-after', async () => {
    upstream.enqueue({ kind: 'error', status: 429 });
    const error = await failure(client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    expect(error.headers?.get('retry-after')).toBe('1');
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
  });

  it('answers bad requests with 400 invalid_request_error, from the gateway and from the upstream', async () => {
    const missing = await failure(client.messages.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming));
    expect(missing).toBeInstanceOf(Anthropic.BadRequestError);
    expect(missing.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'max_tokens: Field required' } });
    const hot = { model: MODEL, max_tokens: 10, temperature: 1.5, messages: [{ role: 'user', content: 'x' }] } as Anthropic.MessageCreateParamsNonStreaming;
    const upstreamSays = await failure(client.messages.create(hot));
    expect(upstreamSays).toBeInstanceOf(Anthropic.BadRequestError);
    expect(upstreamSays.message).toContain('temperature');
    const malformed = await fetch(`${tg.url}/anthropic/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it('answers an unknown provider and an unknown URL with 404 not_found_error', async () => {
    const error = await failure(client.messages.create({ model: 'nope/some-model', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
    const unknown = await fetch(`${tg.url}/anthropic/v1/nothing-here`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error', message: expect.stringContaining('/anthropic/v1/nothing-here') } });
  });

  it('keeps 529 overloaded as 529', async () => {
    upstream.enqueue({ kind: 'error', status: 529 });
    const error = await failure(client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(error.status).toBe(529);
    expect(error.error).toMatchObject({ type: 'error', error: { type: 'overloaded_error' } });
  });

  it("answers a whole message with the upstream's own digits: a tool input's integer past 2^53 is not rounded", async () => {
    const body = `{"id":"msg_big","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_1","name":"find_order","input":{"order_id":12345678901234567890,"ratio":0.10000000000000000555}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":9}}`;
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body });
    const response = await fetch(`${tg.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'client-side-key', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'find it' }] }),
    });
    expect(response.status).toBe(200);
    // Byte for byte, but for the model the client named.
    expect(await response.text()).toBe(body.replace('"claude-sonnet-4-5-20250929"', JSON.stringify(MODEL)));
  });

  it('passes an event whose data spans several lines through as data lines, which the SDK reads', async () => {
    const frame = (event: string, data: Record<string, unknown>, multiline = false): string =>
      `event: ${event}\ndata: ${multiline ? JSON.stringify(data, null, 1).replaceAll('\n', '\ndata: ') : JSON.stringify(data)}\n\n`;
    const body = [
      frame('message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 3, output_tokens: 1 } } }),
      frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
      frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'over lines' } }, true),
      frame('content_block_stop', { type: 'content_block_stop', index: 0 }),
      frame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 2 } }, true),
      frame('message_stop', { type: 'message_stop' }),
    ].join('');
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const message = await client.messages.stream({ model: MODEL, max_tokens: 20, messages: [{ role: 'user', content: 'x' }] }).finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'over lines' }]);
    expect(message.usage.output_tokens).toBe(2);
  });

  it('ends a stream that fails midway with an error event and no message_stop', async () => {
    upstream.enqueue({ kind: 'stream-error', after: 4 });
    const { response, events } = await rawStream({ model: MODEL, max_tokens: 200, messages: [{ role: 'user', content: 'one two three four' }] });
    expect(response.status).toBe(200);
    expect(events[0]?.event).toBe('message_start');
    // The upstream's own error type, as Anthropic documents the mid-stream error (not the api_error of a 502).
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', error: { type: 'overloaded_error', message: expect.stringContaining('Overloaded') } } });
    expect(events.map((e) => e.event)).not.toContain('message_stop');

    upstream.enqueue({ kind: 'stream-error', after: 4 });
    const stream = client.messages.stream({ model: MODEL, max_tokens: 200, messages: [{ role: 'user', content: 'one two three four' }] });
    await expect(stream.finalMessage()).rejects.toBeInstanceOf(Anthropic.APIError);
  });
});

describe('virtual keys', () => {
  it('takes the key from x-api-key and charges it', async () => {
    const created = await fetch(`${tg.url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'anthropic-sdk', budget: 1000, models: ['anthropic/*', 'counted/*'] }),
    });
    expect(created.status).toBe(201);
    const { id, key } = (await created.json()) as { id: string; key: string };
    const keyed = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key, maxRetries: 0 });
    const message = await keyed.messages.create({ model: MODEL, max_tokens: 50, messages: [{ role: 'user', content: 'charge me' }] });
    expect(JSON.stringify(lastCall().headers)).not.toContain(key);
    const record = (await (await fetch(`${tg.url}/api/keys/${id}`)).json()) as { requests: number; spend: number };
    expect(record.requests).toBe(1);
    expect(record.spend).toBeCloseTo(message.usage.input_tokens + message.usage.output_tokens, 6);

    // The key's model list holds for messages and counts alike: it may not use OpenAI models.
    const denied = await failure(keyed.messages.create({ model: 'openai/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] }));
    expect(denied).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(denied.error).toMatchObject({ type: 'error', error: { type: 'permission_error' } });
    const countDenied = await failure(keyed.messages.countTokens({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'x' }] }));
    expect(countDenied).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(await keyed.messages.countTokens({ model: 'counted/claude-x', messages: [{ role: 'user', content: 'x' }] })).toEqual({ input_tokens: 17 });
  });
});

describe('the AI SDK Anthropic provider', () => {
  const provider = () => createAnthropic({ baseURL: `${tg.url}/anthropic/v1`, apiKey: 'client-side-key' });

  it('generates text', async () => {
    const result = await generateText({ model: provider()(MODEL), prompt: 'hello from the ai sdk', maxRetries: 0 });
    expect(result.text).toBe('echo: hello from the ai sdk');
    expect(result.finishReason).toBe('stop');
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  });

  it('streams text', async () => {
    const result = streamText({ model: provider()(MODEL), prompt: 'stream from the ai sdk', maxRetries: 0 });
    let text = '';
    for await (const piece of result.textStream) text += piece;
    expect(text).toBe('echo: stream from the ai sdk');
    expect(await result.finishReason).toBe('stop');
    expect((await result.usage).inputTokens).toBeGreaterThan(0);
  });
});

describe('models with the official Anthropic SDK', () => {
  it('lists models page by page, Anthropic’s by their bare names and others as <provider>/<model>', async () => {
    const first = await client.models.list({ limit: 5 });
    expect(first.data).toHaveLength(5);
    expect(first.has_more).toBe(true);
    // Anthropic's own models come first, by their bare names.
    for (const model of first.data) expect(model.id.startsWith('claude-')).toBe(true);
    const ids: string[] = [];
    for await (const model of client.models.list({ limit: 200 })) ids.push(model.id);
    expect(ids.length).toBeGreaterThan(1_000);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toContain('claude-sonnet-4-5');
    expect(ids).toContain('openai/gpt-4o');
    const one = await client.models.retrieve('claude-sonnet-4-5');
    expect(one).toMatchObject({ type: 'model', id: 'claude-sonnet-4-5' });
    const missing = await client.models.retrieve('no-such-model').catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  });

  it('pages backwards from before_id, has_more saying whether older pages remain, as the SDK iterates', async () => {
    const ids: string[] = [];
    for await (const model of client.models.list({ limit: 200 })) ids.push(model.id);
    const cursor = ids[7] as string;
    // The page just before the cursor, and has_more: true because models 0-1 come before it.
    const page = await client.models.list({ before_id: cursor, limit: 5 });
    expect(page.data.map((model) => model.id)).toEqual(ids.slice(2, 7));
    expect(page.has_more).toBe(true);
    expect(page.first_id).toBe(ids[2]);
    // The SDK follows first_id backwards while has_more holds: every model before the cursor, once.
    const before: string[] = [];
    for await (const model of client.models.list({ before_id: cursor, limit: 5 })) before.push(model.id);
    expect(before.sort()).toEqual(ids.slice(0, 7).sort());
  });

  it('refuses a cursor naming no model with 400 invalid_request_error, instead of restarting or ending the list', async () => {
    // An unknown after_id used to restart at the first model (a client paging on went round in circles), an
    // unknown before_id to answer an empty page (a client took it for the start of the list).
    for (const query of [{ after_id: 'no-such-model' }, { before_id: 'no-such-model' }]) {
      const error = await failure(client.models.list({ ...query, limit: 5 }));
      expect(error.status).toBe(400);
      expect(error.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect((error.error as { error: { message: string } }).error.message).toMatch(new RegExp(`^${Object.keys(query)[0]}: `));
    }
  });
});
