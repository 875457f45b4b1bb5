import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatResetDuration } from './openai-headers.js';
import { splitTokens } from './openai-responses.js';
import { startOpenAIUpstream, type ScriptedUpstream } from './openai-upstream.js';

const KEY = 'sk-upstream-test';
let upstream: ScriptedUpstream;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: KEY });
});
afterAll(async () => {
  await upstream.close();
});
beforeEach(() => upstream.reset());

interface PostOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  server?: ScriptedUpstream;
}

function post(body: unknown, options: PostOptions = {}): Promise<Response> {
  const server = options.server ?? upstream;
  return fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, ...options.headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: options.signal,
  });
}

function ask(text: string, extra: Record<string, unknown> = {}) {
  return { model: 'gpt-4o-mini', messages: [{ role: 'user', content: text }], ...extra };
}

/** Splits an SSE body into its data payloads, asserting the exact `data: <payload>\n\n` framing. */
function sseData(raw: string): string[] {
  expect(raw.endsWith('\n\n')).toBe(true);
  const events = raw.slice(0, -2).split('\n\n');
  for (const event of events) expect(event).toMatch(/^data: [^\n]*$/);
  return events.map((event) => event.slice('data: '.length));
}

async function streamChunks(body: unknown): Promise<any[]> {
  const res = await post(body);
  expect(res.status).toBe(200);
  const data = sseData(await res.text());
  expect(data.at(-1)).toBe('[DONE]');
  return data.slice(0, -1).map((payload) => JSON.parse(payload));
}

/** Reads a streamed body until `count` SSE frames have arrived. */
async function readFrames(res: Response, count: number): Promise<string> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  while (text.split('\n\n').length - 1 < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return text;
}

/** Response bodies are loosely typed on purpose: the assertions are the schema. */
async function jsonOf(res: Response | Promise<Response>): Promise<any> {
  return (await res).json();
}

async function errorOf(res: Response) {
  expect(res.headers.get('content-type')).toBe('application/json');
  const body: { error: Record<string, unknown> } = await jsonOf(res);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  return body.error;
}

describe('non-streaming chat completions', () => {
  it('answers with a chat.completion echoing the last user message and the requested model', async () => {
    const res = await post({
      model: 'my-model',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'earlier question' },
        { role: 'assistant', content: 'earlier answer' },
        { role: 'user', content: 'hello there world' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const body = await jsonOf(res);
    expect(body.id).toMatch(/^chatcmpl-[A-Za-z0-9]{29}$/);
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('my-model');
    expect(Math.abs(body.created - Date.now() / 1000)).toBeLessThan(5);
    expect(body.system_fingerprint).toMatch(/^fp_[0-9a-f]+$/);
    expect(body.choices).toEqual([
      { index: 0, message: { role: 'assistant', content: 'echo: hello there world', refusal: null }, logprobs: null, finish_reason: 'stop' },
    ]);
    // prompt: (2 + 2 + 2 + 3 words) + 3 per message; completion: "echo:", "hello", "there", "world".
    expect(body.usage).toEqual({
      prompt_tokens: 21,
      completion_tokens: 4,
      total_tokens: 25,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    });
  });

  it('sends OpenAI response headers with rate-limit budgets that decrease', async () => {
    const first = await post(ask('one'));
    const second = await post(ask('two'));
    for (const res of [first, second]) {
      expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
      expect(res.headers.get('openai-version')).toBe('2020-10-01');
      expect(res.headers.get('openai-processing-ms')).toMatch(/^\d+$/);
      expect(res.headers.get('x-ratelimit-limit-requests')).toBe('10000');
      expect(res.headers.get('x-ratelimit-limit-tokens')).toBe('2000000');
      expect(res.headers.get('x-ratelimit-reset-requests')).toMatch(/^(\d+ms|[\d.]+s|\d+m[\d.]+s)$/);
      expect(res.headers.get('x-ratelimit-reset-tokens')).toMatch(/^(\d+ms|[\d.]+s|\d+m[\d.]+s)$/);
    }
    expect(first.headers.get('x-request-id')).not.toBe(second.headers.get('x-request-id'));
    const remaining = (res: Response, name: string) => Number(res.headers.get(`x-ratelimit-remaining-${name}`));
    expect(remaining(second, 'requests')).toBe(remaining(first, 'requests') - 1);
    expect(remaining(second, 'tokens')).toBeLessThan(remaining(first, 'tokens'));
  });

  it('joins the text parts of array content', async () => {
    const res = await post({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'part one' }, { type: 'image_url', image_url: { url: 'data:,' } }, { type: 'text', text: 'part two' }] }],
    });
    expect((await jsonOf(res)).choices[0].message.content).toBe('echo: part one part two');
  });

  it('honours n with one choice per index and usage summed over choices', async () => {
    const body = await jsonOf(post(ask('a b', { n: 3 })));
    expect(body.choices.map((c: any) => c.index)).toEqual([0, 1, 2]);
    expect(body.choices.every((c: any) => c.message.content === 'echo: a b')).toBe(true);
    expect(body.usage.completion_tokens).toBe(9);
  });

  it('truncates before a stop sequence, keeping finish_reason stop', async () => {
    const single = await jsonOf(post(ask('one two three four', { stop: ' three' })));
    expect(single.choices[0].message.content).toBe('echo: one two');
    expect(single.choices[0].finish_reason).toBe('stop');
    const earliest = await jsonOf(post(ask('one two three four', { stop: ['four', 'two'] })));
    expect(earliest.choices[0].message.content).toBe('echo: one ');
    expect(earliest.usage.completion_tokens).toBe(2);
  });

  it('truncates to max_tokens / max_completion_tokens words with finish_reason length', async () => {
    const short = await jsonOf(post(ask('one two three four', { max_tokens: 2 })));
    expect(short.choices[0].message.content).toBe('echo: one');
    expect(short.choices[0].finish_reason).toBe('length');
    expect(short.usage.completion_tokens).toBe(2);
    const preferNew = await jsonOf(post(ask('one two three four', { max_tokens: 1, max_completion_tokens: 3 })));
    expect(preferNew.choices[0].message.content).toBe('echo: one two');
    const roomy = await jsonOf(post(ask('one two', { max_completion_tokens: 3 })));
    expect(roomy.choices[0].finish_reason).toBe('stop');
  });

  it('returns logprobs per output token with top_logprobs entries', async () => {
    const body = await jsonOf(post(ask('héllo there', { logprobs: true, top_logprobs: 3 })));
    const { content, logprobs } = { content: body.choices[0].message.content, logprobs: body.choices[0].logprobs };
    expect(logprobs.refusal).toBeNull();
    expect(logprobs.content.map((t: any) => t.token).join('')).toBe(content);
    for (const token of logprobs.content) {
      expect(token.bytes).toEqual([...Buffer.from(token.token, 'utf8')]);
      expect(token.logprob).toBeLessThan(0);
      expect(token.top_logprobs).toHaveLength(3);
      expect(token.top_logprobs[0]).toEqual({ token: token.token, logprob: token.logprob, bytes: token.bytes });
    }
  });

  it('answers JSON for response_format json_object and json_schema', async () => {
    for (const response_format of [{ type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } }]) {
      const body = await jsonOf(post(ask('give me "json"', { response_format })));
      expect(JSON.parse(body.choices[0].message.content)).toEqual({ echo: 'give me "json"' });
    }
  });
});

describe('tool calls', () => {
  const tools = [
    { type: 'function', function: { name: 'search_docs', parameters: { type: 'object' } } },
    { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
  ];

  it('calls the first tool with the last user text as query', async () => {
    const body = await jsonOf(post(ask('find rate limits', { tools })));
    const choice = body.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toHaveLength(1);
    const [call] = choice.message.tool_calls;
    expect(call.id).toMatch(/^call_[A-Za-z0-9]{24}$/);
    expect(call.type).toBe('function');
    expect(call.function.name).toBe('search_docs');
    expect(JSON.parse(call.function.arguments)).toEqual({ query: 'find rate limits' });
  });

  it('calls the tool named by tool_choice and answers text for tool_choice none', async () => {
    const named = await jsonOf(post(ask('weather?', { tools, tool_choice: { type: 'function', function: { name: 'get_weather' } } })));
    expect(named.choices[0].message.tool_calls[0].function.name).toBe('get_weather');
    const none = await jsonOf(post(ask('just talk', { tools, tool_choice: 'none' })));
    expect(none.choices[0].message.content).toBe('echo: just talk');
    expect(none.choices[0].finish_reason).toBe('stop');
  });

  it('completes the round trip by echoing the tool result', async () => {
    const first = await jsonOf(post(ask('find rate limits', { tools })));
    const message = first.choices[0].message;
    const second = await jsonOf(
      post({
        model: 'gpt-4o-mini',
        tools,
        messages: [{ role: 'user', content: 'find rate limits' }, message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'limits are 10 rpm' }],
      }),
    );
    expect(second.choices[0].message.content).toBe('echo: limits are 10 rpm');
    expect(second.choices[0].finish_reason).toBe('stop');
  });
});

describe('streaming', () => {
  it('frames chunks as data lines, one word per content chunk, ending with [DONE]', async () => {
    const res = await post(ask('stream these words', { model: 'streamer' , stream: true }));
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    const chunks = sseData(await res.text()).slice(0, -1).map((d) => JSON.parse(d));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(new Set(chunks.map((c) => c.created)).size).toBe(1);
    for (const chunk of chunks) {
      expect(chunk.object).toBe('chat.completion.chunk');
      expect(chunk.model).toBe('streamer');
      expect(chunk.system_fingerprint).toMatch(/^fp_/);
      expect('usage' in chunk).toBe(false);
      expect(chunk.choices).toHaveLength(1);
    }
    expect(chunks[0].choices[0]).toEqual({ index: 0, delta: { role: 'assistant', content: '', refusal: null }, logprobs: null, finish_reason: null });
    expect(chunks.slice(1, -1).map((c) => c.choices[0].delta.content)).toEqual(['echo:', ' stream', ' these', ' words']);
    expect(chunks.at(-1).choices[0]).toEqual({ index: 0, delta: {}, logprobs: null, finish_reason: 'stop' });
  });

  it('with include_usage, every chunk has usage null and a final chunk with choices [] carries usage', async () => {
    const chunks = await streamChunks(ask('count my tokens', { stream: true, stream_options: { include_usage: true } }));
    const last = chunks.at(-1);
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
  });

  it('streams every choice index for n > 1 and stops at max_tokens with length', async () => {
    const chunks = await streamChunks(ask('a b c', { stream: true, n: 2, max_tokens: 2 }));
    for (const index of [0, 1]) {
      const mine = chunks.filter((c) => c.choices[0].index === index);
      expect(mine.map((c) => c.choices[0].delta.content ?? '').join('')).toBe('echo: a');
      expect(mine.at(-1).choices[0].finish_reason).toBe('length');
    }
  });

  it('streams a tool call as an id/name delta followed by several argument fragments', async () => {
    const tools = [{ type: 'function', function: { name: 'search_docs' } }];
    const chunks = await streamChunks(ask('stream a tool call', { stream: true, tools }));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: null, refusal: null });
    const head = chunks[1].choices[0].delta.tool_calls[0];
    expect(head).toMatchObject({ index: 0, type: 'function', function: { name: 'search_docs', arguments: '' } });
    expect(head.id).toMatch(/^call_/);
    const fragments = chunks.slice(2, -1).map((c) => c.choices[0].delta.tool_calls[0]);
    expect(fragments.length).toBeGreaterThan(1);
    for (const fragment of fragments) expect(Object.keys(fragment).sort()).toEqual(['function', 'index']);
    expect(JSON.parse(fragments.map((f) => f.function.arguments).join(''))).toEqual({ query: 'stream a tool call' });
    expect(chunks.at(-1).choices[0]).toMatchObject({ delta: {}, finish_reason: 'tool_calls' });
  });

  it('carries per-chunk logprobs when asked', async () => {
    const chunks = await streamChunks(ask('x y', { stream: true, logprobs: true, top_logprobs: 1 }));
    const content = chunks.filter((c) => c.choices[0].delta.content);
    for (const chunk of content) {
      expect(chunk.choices[0].logprobs.content).toHaveLength(1);
      expect(chunk.choices[0].logprobs.content[0].token).toBe(chunk.choices[0].delta.content);
    }
  });
});

describe('validation, auth and routes', () => {
  it('rejects a body that is not JSON', async () => {
    const res = await post('{"model": ');
    expect(res.status).toBe(400);
    const error = await errorOf(res);
    expect(error).toMatchObject({ type: 'invalid_request_error', param: null, code: null });
    expect(error.message).toMatch(/^We could not parse the JSON body of your request/);
  });

  it('requires model and a non-empty messages array', async () => {
    const noModel = await post({ messages: [{ role: 'user', content: 'x' }] });
    expect(noModel.status).toBe(400);
    expect(await errorOf(noModel)).toMatchObject({ type: 'invalid_request_error', param: 'model' });
    for (const messages of [undefined, [], 'hi']) {
      const res = await post({ model: 'gpt-4o', messages });
      expect(res.status).toBe(400);
      expect(await errorOf(res)).toMatchObject({ type: 'invalid_request_error', param: 'messages' });
    }
  });

  it('rejects stream_options without stream, like OpenAI', async () => {
    const res = await post(ask('x', { stream_options: { include_usage: true } }));
    expect(res.status).toBe(400);
    expect(await errorOf(res)).toMatchObject({ param: 'stream_options' });
  });

  it('refuses Anthropic’s thinking and cache_control in OpenAI’s words', async () => {
    const thinking = await post(ask('x', { thinking: { type: 'enabled', budget_tokens: 1024 } }));
    expect(thinking.status).toBe(400);
    expect(await errorOf(thinking)).toEqual({ message: 'Unrecognized request argument supplied: thinking', type: 'invalid_request_error', param: null, code: null });
    const part = { type: 'text', text: 'x', cache_control: { type: 'ephemeral' } };
    const marked = await post({ model: 'gpt-4o', messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: [part] }] });
    expect(marked.status).toBe(400);
    expect(await errorOf(marked)).toMatchObject({ message: "Unknown parameter: 'messages[1].content[0].cache_control'.", param: 'messages[1].content[0].cache_control', code: 'unknown_parameter' });
    const tool = { type: 'function', function: { name: 'f', parameters: { type: 'object' } }, cache_control: { type: 'ephemeral' } };
    const tools = await post(ask('x', { tools: [tool] }));
    expect(await errorOf(tools)).toMatchObject({ param: 'tools[0].cache_control', code: 'unknown_parameter' });
  });

  it('answers 401 invalid_api_key for a missing or wrong bearer token', async () => {
    for (const headers of [{ authorization: '' }, { authorization: 'Bearer sk-wrong-key-123456' }]) {
      const res = await post(ask('x'), { headers });
      expect(res.status).toBe(401);
      expect(await errorOf(res)).toMatchObject({ type: 'invalid_request_error', param: null, code: 'invalid_api_key' });
    }
    const wrong = await post(ask('x'), { headers: { authorization: 'Bearer sk-wrong-key-123456' } });
    const error = await errorOf(wrong);
    expect(error.message).toMatch(/^Incorrect API key provided: /);
    expect(error.message).not.toContain('sk-wrong-key-123456');
  });

  it('accepts any key when apiKey is null', async () => {
    const open = await startOpenAIUpstream({ apiKey: null });
    try {
      const res = await fetch(`${open.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(ask('x')) });
      expect(res.status).toBe(200);
    } finally {
      await open.close();
    }
  });

  it('lists models in the OpenAI list shape', async () => {
    const res = await fetch(`${upstream.url}/v1/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(res.status).toBe(200);
    const body = await jsonOf(res);
    expect(body.object).toBe('list');
    expect(body.data.length).toBeGreaterThan(0);
    for (const model of body.data) {
      expect(Object.keys(model).sort()).toEqual(['created', 'id', 'object', 'owned_by']);
      expect(model.object).toBe('model');
    }
  });

  it('answers 404 in OpenAI shape for unknown routes, wrong methods and paths without /v1', async () => {
    for (const [method, path] of [['GET', '/v1/unknown'], ['GET', '/v1/chat/completions'], ['POST', '/chat/completions']] as const) {
      const res = await fetch(`${upstream.url}${path}`, { method, headers: { authorization: `Bearer ${KEY}` }, body: method === 'POST' ? '{}' : undefined });
      expect(res.status).toBe(404);
      expect(await errorOf(res)).toEqual({ message: `Invalid URL (${method} ${path})`, type: 'invalid_request_error', param: null, code: null });
    }
  });
});

describe('scripted modes', () => {
  it('answers a 500 server_error in OpenAI shape', async () => {
    upstream.enqueue({ kind: 'error', status: 500 });
    const res = await post(ask('x'));
    expect(res.status).toBe(500);
    expect(await errorOf(res)).toEqual({
      message: 'The server had an error while processing your request. Sorry about that!',
      type: 'server_error',
      param: null,
      code: null,
    });
  });

  it('answers a 429 with retry-after and exhausted rate-limit headers', async () => {
    upstream.enqueue({ kind: 'error', status: 429 });
    const res = await post(ask('x'));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(res.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
    expect(res.headers.get('x-ratelimit-limit-requests')).toBe('10000');
    const error = await errorOf(res);
    expect(error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded', param: null });
    expect(error.message).toMatch(/^Rate limit reached for gpt-4o-mini/);
  });

  it('lets an error mode override type, code, message and headers', async () => {
    upstream.enqueue({ kind: 'error', status: 429, type: 'insufficient_quota', code: 'insufficient_quota', message: 'no money', headers: { 'retry-after': '0', 'x-extra': 'yes' } });
    const res = await post(ask('x'));
    expect(res.headers.get('retry-after')).toBe('0');
    expect(res.headers.get('x-extra')).toBe('yes');
    expect(await errorOf(res)).toEqual({ message: 'no money', type: 'insufficient_quota', param: null, code: 'insufficient_quota' });
  });

  it('picks error modes from the model name', async () => {
    const bad = await post(ask('x', { model: 'error-400' }));
    expect(bad.status).toBe(400);
    expect(await errorOf(bad)).toMatchObject({ type: 'invalid_request_error' });
    const overloaded = await post(ask('x', { model: 'error-503' }));
    expect(overloaded.status).toBe(503);
    await overloaded.body?.cancel();
    const prefixed = await post(ask('x', { model: 'openai/error-502' }));
    expect(prefixed.status).toBe(502);
    expect(await errorOf(prefixed)).toMatchObject({ type: 'server_error' });
  });

  it('uses enqueued modes first, then the model-name mode, then the default mode', async () => {
    upstream.setMode({ kind: 'error', status: 503 });
    upstream.enqueue({ kind: 'error', status: 418 }, { kind: 'ok' });
    const statuses: number[] = [];
    for (const model of ['error-500', 'error-500', 'error-500', 'gpt-4o']) {
      const res = await post(ask('x', { model }));
      await res.body?.cancel();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([418, 200, 500, 503]);
  });

  it('slow-headers delays the status line', async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 150 });
    const started = Date.now();
    const res = await post(ask('x'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect((await jsonOf(res)).choices[0].message.content).toBe('echo: x');
  });

  it('slow-chunks spaces out streamed chunks, and delays a JSON body after the headers', async () => {
    upstream.enqueue({ kind: 'slow-chunks', delayMs: 40 }, { kind: 'slow-chunks', delayMs: 150 });
    const started = Date.now();
    const chunks = await streamChunks(ask('a b', { stream: true }));
    // role, "echo:", " a", " b", finish, [DONE]: five gaps.
    expect(chunks).toHaveLength(5);
    expect(Date.now() - started).toBeGreaterThanOrEqual(5 * 40 - 10);

    const jsonStarted = Date.now();
    const res = await post(ask('x'));
    const headersAfter = Date.now() - jsonStarted;
    await jsonOf(res);
    expect(headersAfter).toBeLessThan(140);
    expect(Date.now() - jsonStarted).toBeGreaterThanOrEqual(140);
  });

  it('stall-after keeps the stream open after N chunks until the client closes it', async () => {
    upstream.enqueue({ kind: 'stall-after', chunks: 2 });
    const controller = new AbortController();
    const res = await post(ask('one two three', { stream: true }), { signal: controller.signal });
    const text = await readFrames(res, 2);
    expect(sseData(text)).toHaveLength(2);
    expect(await upstream.waitForClose(0, 100)).toBe(false);
    expect(upstream.calls[0]).toMatchObject({ closedByClient: false, finished: false });
    controller.abort();
    expect(await upstream.waitForClose(0)).toBe(true);
    expect(upstream.calls[0]).toMatchObject({ closedByClient: true, finished: false });
  });

  it('detects a client that gives up while waiting for headers', async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 10_000 });
    const controller = new AbortController();
    const pending = post(ask('x'), { signal: controller.signal }).catch((error: unknown) => error);
    await expect.poll(() => upstream.calls.length).toBe(1);
    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    expect(await upstream.waitForClose(0)).toBe(true);
  });

  it('break-after drops the connection mid-stream without counting it as a client close', async () => {
    upstream.enqueue({ kind: 'break-after', chunks: 3 });
    const res = await post(ask('one two three', { stream: true }));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    await expect.poll(() => upstream.calls[0]?.finished === false && upstream.calls[0]?.closedByClient === false).toBe(true);
    expect(await upstream.waitForClose(0, 100)).toBe(false);
  });

  it('break-after cuts a JSON body short', async () => {
    const res = await post(ask('one two three', { model: 'break-after-1' }));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it('reset destroys the socket without a response', async () => {
    upstream.enqueue({ kind: 'reset' });
    await expect(post(ask('x'))).rejects.toThrow();
    expect(upstream.calls).toHaveLength(1);
    expect(upstream.calls[0]?.body.messages[0].content).toBe('x');
    const after = await post(ask('still alive'));
    expect(after.status).toBe(200);
    await after.body?.cancel();
  });

  it('bad-json answers 200 with an unparseable body, streaming or not', async () => {
    const res = await post(ask('x', { model: 'bad-json' }));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    await expect(res.json()).rejects.toThrow();
    const streamed = await post(ask('x', { model: 'bad-json', stream: true }));
    const [first] = sseData(await streamed.text());
    expect(() => JSON.parse(first ?? '')).toThrow();
  });
});

describe('recording and lifecycle', () => {
  it('records method, path, headers and parsed body of every call in order', async () => {
    await jsonOf(post(ask('first'), { headers: { 'x-trace': 'abc' } }));
    await (await fetch(`${upstream.url}/v1/models?limit=1`, { headers: { authorization: `Bearer ${KEY}` } }));
    expect(upstream.calls).toHaveLength(2);
    const [chat, models] = upstream.calls;
    expect(chat).toMatchObject({ method: 'POST', path: '/v1/chat/completions', body: ask('first'), closedByClient: false, finished: true });
    expect(chat?.headers['x-trace']).toBe('abc');
    expect(chat?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(models).toMatchObject({ method: 'GET', path: '/v1/models', body: undefined, finished: true });
    expect(await upstream.waitForClose(0)).toBe(false);
  });

  it('reset() clears calls, queued modes and the default mode', async () => {
    upstream.setMode({ kind: 'error', status: 500 });
    upstream.enqueue({ kind: 'error', status: 400 });
    await jsonOf(post(ask('x')));
    upstream.reset();
    expect(upstream.calls).toHaveLength(0);
    const res = await post(ask('x'));
    expect(res.status).toBe(200);
    await res.text();
    expect(upstream.calls).toHaveLength(1);
  });

  it('does not record when record is false', async () => {
    const quiet = await startOpenAIUpstream({ record: false, apiKey: null });
    try {
      const res = await post(ask('x'), { server: quiet });
      expect(res.status).toBe(200);
      await res.text();
      expect(quiet.calls).toHaveLength(0);
    } finally {
      await quiet.close();
    }
  });

  it('spaces chunks by chunkDelayMs', async () => {
    const slow = await startOpenAIUpstream({ chunkDelayMs: 30, apiKey: null });
    try {
      const started = Date.now();
      const res = await post(ask('a', { stream: true }), { server: slow });
      sseData(await res.text());
      // role, "echo:", " a", finish, [DONE]: four gaps.
      expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 30 - 10);
    } finally {
      await slow.close();
    }
  });

  it('close() returns promptly with stalled streams and pending delays', async () => {
    const server = await startOpenAIUpstream({ apiKey: null });
    server.enqueue({ kind: 'stall-after', chunks: 1 }, { kind: 'slow-headers', delayMs: 60_000 });
    const stalled = await post(ask('x', { stream: true }), { server });
    await readFrames(stalled, 1);
    const waiting = post(ask('x'), { server }).catch((error: unknown) => error);
    await expect.poll(() => server.calls.length).toBe(2);
    const closeWait = server.waitForClose(0, 60_000);
    const started = Date.now();
    await server.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await closeWait).toBe(false);
    expect(await waiting).toBeInstanceOf(Error);
    expect(server.calls.every((call) => !call.closedByClient)).toBe(true);
  });
});

describe('helpers', () => {
  it('splits content into words that carry their leading space and join back exactly', () => {
    expect(splitTokens('echo: hello  world')).toEqual(['echo:', ' hello', '  world']);
    expect(splitTokens('echo: ')).toEqual(['echo: ']);
    expect(splitTokens('a b \n')).toEqual(['a', ' b \n']);
    expect(splitTokens('')).toEqual([]);
  });

  it('formats reset durations like OpenAI', () => {
    expect(formatResetDuration(0)).toBe('0s');
    expect(formatResetDuration(6)).toBe('6ms');
    expect(formatResetDuration(1000)).toBe('1s');
    expect(formatResetDuration(1500)).toBe('1.5s');
    expect(formatResetDuration(360_000)).toBe('6m0s');
  });
});

describe('standalone process', () => {
  it('starts from the command line without auth or recording and stops on SIGTERM', async () => {
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    const entry = fileURLToPath(new URL('./openai-upstream.ts', import.meta.url));
    const child = spawn(tsx, [entry, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (data: Buffer) => {
          out += data.toString();
          const match = /listening (http:\/\/\S+)/.exec(out);
          if (match?.[1]) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
      });
      const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(ask('bench', { model: 'error-429' })) });
      expect(res.status).toBe(429);
      await res.text();
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
