import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The HTTP door: what the gateway does with requests that are malformed before any route can read them
// (nesting, framing) or that arrive too slowly, and that its clocks never cut an answer short.

const REQUEST_TIMEOUT_MS = 500;
const HEADERS_TIMEOUT_MS = 300;

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let port: number;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  tg = await startGateway(openAIConfig(upstream.url, { settings: { request_timeout_ms: REQUEST_TIMEOUT_MS, headers_timeout_ms: HEADERS_TIMEOUT_MS } }));
  port = Number(new URL(tg.url).port);
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const nested = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);
const nestedObject = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

async function post(path: string, body: string, contentType = 'application/json'): Promise<{ status: number; body: any }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: response.status, body: await response.json() };
}

describe('a JSON body that starts with a byte order mark', () => {
  // What Windows tools write (PowerShell's UTF8 encoding, .NET's StreamWriter), sent on by curl --data-binary @file.
  // RFC 8259 lets a parser ignore it, and Python's json.loads of the raw bytes (the vendors' APIs) does.
  it.each([
    ['/v1/chat/completions', CHAT_BODY],
    ['/anthropic/v1/messages', '{"model":"openai/gpt-4o-mini","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'],
  ])('is read without it on %s', async (path, body) => {
    const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body)]) });
    expect(response.status, await response.clone().text()).toBe(200);
    expect(upstream.calls).toHaveLength(1);
  });

  it('only at the start: one anywhere else is still invalid JSON', async () => {
    const { status, body } = await post('/v1/chat/completions', ` \uFEFF${CHAT_BODY}`);
    expect(status).toBe(400);
    expect(body.error.code).toBe('invalid_json');
  });
});

describe('JSON nested too deep', () => {
  const chat = (extra: string) => `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}],${extra}}`;

  it.each([
    ['5,000 levels in metadata', chat(`"metadata":{"x":${nested(5_000)}}`)],
    ['100,000 levels as the messages', `{"model":"openai/gpt-4o-mini","messages":${nested(100_000)}}`],
    ['20,000 nested objects in a tool schema', chat(`"tools":[{"type":"function","function":{"name":"f","parameters":${nestedObject(20_000)}}}]`)],
  ])('is a 400 json_too_deep on /v1, not a 500: %s', async (_name, body) => {
    const { status, body: error } = await post('/v1/chat/completions', body);
    expect(status).toBe(400);
    expect(error).toEqual({
      error: { message: expect.stringContaining('more than 128 levels deep'), type: 'invalid_request_error', param: null, code: 'json_too_deep' },
    });
    expect(upstream.calls).toHaveLength(0);
  });

  it('serves a body nested right up to the limit', async () => {
    // 128 levels in all: the body object, metadata, and 126 arrays.
    const { status } = await post('/v1/chat/completions', chat(`"metadata":{"x":${nested(126)}}`));
    expect(status).toBe(200);
    const { status: over } = await post('/v1/chat/completions', chat(`"metadata":{"x":${nested(127)}}`));
    expect(over).toBe(400);
  });

  it('is refused through the official OpenAI client as a BadRequestError', async () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 1_000; i++) deep = { a: deep };
    const error = await tg.client.chat.completions
      .create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }], metadata: { x: deep } as never })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect((error as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('json_too_deep');
  });

  it('is a 400 in Anthropic\'s shape on /anthropic, also through the official Anthropic client', async () => {
    const { status, body } = await post('/anthropic/v1/messages', `{"model":"openai/gpt-4o-mini","max_tokens":5,"messages":${nested(100_000)}}`);
    expect(status).toBe(400);
    expect(body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('levels deep') } });

    let deep: unknown = 'leaf';
    for (let i = 0; i < 1_000; i++) deep = [deep];
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'x', maxRetries: 0 });
    const error = await client.messages
      .create({ model: 'openai/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], metadata: { user_id: deep as never } })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    expect((error as InstanceType<typeof Anthropic.BadRequestError>).status).toBe(400);
  });

  it('is a 400 in Google\'s shape on /genai', async () => {
    const { status, body } = await post('/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent', `{"contents":${nested(100_000)}}`);
    expect(status).toBe(400);
    expect(body).toEqual({ error: { code: 400, message: expect.stringContaining('levels deep'), status: 'INVALID_ARGUMENT' } });
  });

  it('is a 400 on /litellm and on the management API (JSON and merge patch)', async () => {
    const litellm = await post('/litellm/v1/chat/completions', chat(`"metadata":{"x":${nested(5_000)}}`));
    expect(litellm.status).toBe(400);
    expect(litellm.body.error.code).toBe('json_too_deep');

    const key = await post('/api/keys', `{"name":${nested(100_000)}}`);
    expect(key.status).toBe(400);
    expect(key.body.error.code).toBe('json_too_deep');

    const response = await fetch(`${tg.url}/api/config`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: `{"settings":${nestedObject(20_000)}}`,
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as any).error.code).toBe('json_too_deep');
  });
});

interface RawAnswer {
  /** Everything the server sent before closing. */
  text: string;
  status: number | null;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection (rather than the test giving up waiting). */
  closedByServer: boolean;
  elapsedMs: number;
}

/**
 * Sends raw bytes (strings are written, numbers are pauses in ms) and collects the answer until the server
 * closes the connection, or `waitMs` after the last part, when the test closes it.
 */
async function rawExchange(parts: Array<string | number>, waitMs = 3_000): Promise<RawAnswer> {
  const started = Date.now();
  const socket: Socket = connect(port, '127.0.0.1');
  let text = '';
  let closedByServer = false;
  socket.setEncoding('latin1');
  socket.on('data', (data: string) => (text += data));
  socket.on('error', () => {});
  let closedAt = 0;
  const closed = new Promise<void>((resolve) =>
    socket.on('close', () => {
      closedAt = Date.now();
      resolve();
    }),
  );
  socket.on('end', () => (closedByServer = true));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  let open = true;
  void closed.then(() => (open = false));
  for (const part of parts) {
    if (!open) break;
    if (typeof part === 'number') {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, part)))]);
      clearTimeout(timer);
    }
    else socket.write(part);
  }
  const timer = setTimeout(() => socket.destroy(), waitMs);
  await closed;
  clearTimeout(timer);
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const status = /^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1];
  return { text, status: status ? Number(status) : null, headers, body: rest.join('\r\n\r\n'), closedByServer, elapsedMs: closedAt - started };
}

const CHAT_BODY = '{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}';

function request(path: string, headers: string[], body = CHAT_BODY): string {
  return [`POST ${path} HTTP/1.1`, 'host: localhost', 'content-type: application/json', ...headers, '', body].join('\r\n');
}

function expectOpenAIError(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
  const body = JSON.parse(answer.body);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(body.error).toMatchObject({ type: 'invalid_request_error', code });
  expect(answer.closedByServer).toBe(true);
}

describe('malformed framing', () => {
  it.each([
    ['a negative Content-Length', ['content-length: -1'], 'invalid_content_length'],
    ['a Content-Length that is not a number', ['content-length: abc'], 'invalid_content_length'],
    ['two different Content-Lengths', ['content-length: 10', 'content-length: 20'], 'invalid_content_length'],
    ['Content-Length, then chunked encoding', [`content-length: ${CHAT_BODY.length}`, 'transfer-encoding: chunked'], 'invalid_transfer_encoding'],
    ['chunked encoding, then Content-Length', ['transfer-encoding: chunked', `content-length: ${CHAT_BODY.length}`], 'invalid_content_length'],
    ['a Content-Length shorter than the body', ['content-length: 5'], 'malformed_request'],
  ])('%s is a 400 in the OpenAI shape, then the connection closes', async (_name, headers, code) => {
    const answer = await rawExchange([request('/v1/chat/completions', headers)]);
    expectOpenAIError(answer, 400, code);
    expect(upstream.calls).toHaveLength(0);
  });

  it('answers in the route family\'s shape when the path can be read from the bytes', async () => {
    const anthropic = await rawExchange([request('/anthropic/v1/messages', ['content-length: -1'])]);
    expect(anthropic.status).toBe(400);
    expect(anthropic.headers.connection).toBe('close');
    expect(JSON.parse(anthropic.body)).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('Content-Length') } });

    const genai = await rawExchange([request('/genai/v1beta/models/gemini-2.0-flash:generateContent', ['content-length: abc'])]);
    expect(genai.status).toBe(400);
    expect(JSON.parse(genai.body)).toEqual({ error: { code: 400, message: expect.stringContaining('Content-Length'), status: 'INVALID_ARGUMENT' } });
  });

  it('hints at a short Content-Length only when the leftover bytes are what the parser choked on', async () => {
    const short = await rawExchange([request('/v1/chat/completions', ['content-length: 5'])]);
    expect(JSON.parse(short.body).error.message).toContain('Content-Length shorter than the body');
    const badPath = await rawExchange([request('/v1/chat/completions\u00e9', [`content-length: ${CHAT_BODY.length}`])]);
    expectOpenAIError(badPath, 400, 'malformed_request');
    expect(JSON.parse(badPath.body).error.message).not.toContain('Content-Length');
  });

  it('answers garbage that is not HTTP at all with a 400 and a close', async () => {
    const answer = await rawExchange(['\x00\x01 this is not http\r\n\r\n']);
    expectOpenAIError(answer, 400, 'malformed_request');
  });

  it('still serves a well-framed request on a fresh connection afterwards', async () => {
    const answer = await rawExchange([request('/v1/chat/completions', [`content-length: ${CHAT_BODY.length}`, 'connection: close'])]);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('"object":"chat.completion"');
  });
});

describe('a body declared larger than max_body_bytes', () => {
  // The default limit (20 MiB); nothing of the declared body is ever sent.
  const declared = 'content-length: 50000000';

  it('with Expect: 100-continue (curl sends it for bodies over 1 MiB) gets its 413 at once, no 100 Continue, and the connection closes', async () => {
    const answer = await rawExchange([request('/v1/chat/completions', ['expect: 100-continue', declared], '')], 5_000);
    expect(answer.text).not.toContain('100 Continue');
    expectOpenAIError(answer, 413, 'request_too_large');
    expect(answer.elapsedMs).toBeLessThan(2_000);
    expect(upstream.calls).toHaveLength(0);
  });

  it('is refused in the route family\'s shape on /anthropic too', async () => {
    const answer = await rawExchange([request('/anthropic/v1/messages', ['expect: 100-continue', declared], '')], 5_000);
    expect(answer.text).not.toContain('100 Continue');
    expect(answer.status).toBe(413);
    expect(answer.closedByServer).toBe(true);
    expect(JSON.parse(answer.body)).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
  });

  it('without Expect: 413, then the connection closes instead of reading the rest of the declared body', async () => {
    const answer = await rawExchange([request('/v1/chat/completions', [declared], 'x'.repeat(10_000)), 200, 'x'.repeat(10_000)], 5_000);
    expectOpenAIError(answer, 413, 'request_too_large');
    expect(answer.elapsedMs).toBeLessThan(2_000);
  });

  it('a body within the limit with Expect: 100-continue gets 100 Continue, then its answer', async () => {
    const head = request('/v1/chat/completions', ['expect: 100-continue', `content-length: ${CHAT_BODY.length}`, 'connection: close'], '');
    const answer = await rawExchange([head, 300, CHAT_BODY], 5_000);
    expect(answer.text.match(/^HTTP\/1\.1 \d{3}/gm)).toEqual(['HTTP/1.1 100', 'HTTP/1.1 200']);
    expect(answer.text).toContain('echo: hi');
  });
});

describe('pipelined requests', () => {
  it('answers every request sent before the previous answer arrived, in order, each one called upstream', async () => {
    // HTTP/1.1 pipelining: Node holds an answer back until the ones before it on the connection are written.
    const chat = (content: string, extra: string[] = []): string => {
      const body = `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"${content}"}]}`;
      return request('/v1/chat/completions', [`content-length: ${body.length}`, ...extra], body);
    };
    const streamed = '{"model":"openai/gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"third"}]}';
    const answer = await rawExchange([chat('first') + chat('second') + request('/v1/chat/completions', [`content-length: ${streamed.length}`, 'connection: close'], streamed)], 5_000);
    expect(answer.text.match(/^HTTP\/1\.1 \d{3}/gm)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(answer.text).toContain('echo: first');
    expect(answer.text).toContain('echo: second');
    expect(answer.text).toContain('data: [DONE]');
    expect(answer.closedByServer).toBe(true);
    expect(upstream.calls).toHaveLength(3);
  });

  it('a client that leaves while an answer is held back behind another stops both upstream calls', async () => {
    const slow = '{"model":"openai/slow-headers-3000","messages":[{"role":"user","content":"first"}]}';
    const streamed = '{"model":"openai/slow-chunks-250","stream":true,"messages":[{"role":"user","content":"second"}]}';
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write(request('/v1/chat/completions', [`content-length: ${slow.length}`], slow) + request('/v1/chat/completions', [`content-length: ${streamed.length}`], streamed));
    await expect.poll(() => upstream.calls.length).toBe(2);
    socket.destroy();
    expect(await Promise.all([upstream.waitForClose(0, 2_000), upstream.waitForClose(1, 2_000)])).toEqual([true, true]);
  });
});

describe('slow requests', () => {
  it('a body that trickles in past request_timeout_ms gets a 408 in the OpenAI shape and a closed socket', async () => {
    const head = request('/v1/chat/completions', [`content-length: ${CHAT_BODY.length}`], '');
    const dribble: Array<string | number> = [head];
    for (const char of CHAT_BODY.slice(0, 30)) dribble.push(char, 50);
    const answer = await rawExchange(dribble, 5_000);
    expectOpenAIError(answer, 408, 'request_timeout');
    // Within the timeout plus the check interval, never the 5 s the test would wait.
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(answer.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1_000);
    expect(upstream.calls).toHaveLength(0);
  });

  it('a slow body on /anthropic gets its 408 in Anthropic\'s shape', async () => {
    const head = request('/anthropic/v1/messages', [`content-length: ${CHAT_BODY.length}`], '');
    const answer = await rawExchange([head, '{"model"', 2_000], 5_000);
    expect(answer.status).toBe(408);
    expect(answer.closedByServer).toBe(true);
    expect(JSON.parse(answer.body)).toMatchObject({ type: 'error', error: { message: expect.stringContaining('not received in time') } });
  });

  it('headers that never end get a 408 within headers_timeout_ms', async () => {
    const answer = await rawExchange(['POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\n', 100, 'x-slow: 1\r\n', 2_000], 5_000);
    expectOpenAIError(answer, 408, 'request_timeout');
    expect(answer.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 300);
  });

  it('a connection that sends nothing is closed too', async () => {
    const answer = await rawExchange([], 5_000);
    expect(answer.closedByServer).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + 1_000);
  });

  it('leaves an idle keep-alive connection alone: the clocks run only while a request is being received', async () => {
    const first = request('/v1/chat/completions', [`content-length: ${CHAT_BODY.length}`]);
    const second = request('/v1/chat/completions', [`content-length: ${CHAT_BODY.length}`, 'connection: close']);
    const answer = await rawExchange([first, REQUEST_TIMEOUT_MS * 2, second], 3_000);
    expect(answer.text.match(/^HTTP\/1\.1 \d{3}/gm)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
    expect(upstream.calls).toHaveLength(2);
  });

  it('does not cut a streamed answer that lasts longer than the timeouts', async () => {
    const started = Date.now();
    const stream = await tg.client.chat.completions.create({
      model: 'openai/slow-chunks-250',
      messages: [{ role: 'user', content: 'tell me a story' }],
      stream: true,
    });
    let text = '';
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(Date.now() - started).toBeGreaterThan(REQUEST_TIMEOUT_MS * 2);
    expect(finish).toBe('stop');
    expect(text.length).toBeGreaterThan(0);
  });

  it('does not cut a non-streamed answer that takes longer than the timeouts', async () => {
    const started = Date.now();
    const completion = await tg.client.chat.completions.create({ model: 'openai/slow-headers-1200', messages: [{ role: 'user', content: 'hi' }] });
    expect(Date.now() - started).toBeGreaterThan(1_000);
    expect(completion.choices[0]?.finish_reason).toBe('stop');
  });
});

describe('a served URL with the wrong method', () => {
  async function call(method: string, path: string): Promise<{ status: number; allow: string | null; body: any }> {
    const response = await fetch(`${tg.url}${path}`, { method });
    return { status: response.status, allow: response.headers.get('allow'), body: await response.json() };
  }

  it('GET /v1/chat/completions (a URL opened in a browser, curl without -d) is a 405 naming POST, not an unknown URL', async () => {
    const answer = await call('GET', '/v1/chat/completions');
    expect(answer.status).toBe(405);
    expect(answer.allow).toBe('POST');
    expect(answer.body).toEqual({
      error: { message: 'Method GET is not allowed on /v1/chat/completions; it takes POST.', type: 'invalid_request_error', param: null, code: 'method_not_allowed' },
    });
  });

  it('through the official OpenAI client: an APIError with status 405', async () => {
    const error = await tg.client.get('/chat/completions').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(405);
    expect((error as Error).message).toContain('it takes POST');
  });

  it('on /litellm and the model list alike', async () => {
    expect(await call('GET', '/litellm/v1/chat/completions')).toMatchObject({ status: 405, allow: 'POST' });
    expect(await call('DELETE', '/v1/models')).toMatchObject({ status: 405, allow: 'GET, HEAD', body: { error: { code: 'method_not_allowed' } } });
  });

  it("in Anthropic's shape on /anthropic and Google's on /genai", async () => {
    const anthropic = await call('GET', '/anthropic/v1/messages');
    expect(anthropic).toMatchObject({ status: 405, allow: 'POST' });
    expect(anthropic.body).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: 'Method GET is not allowed on /anthropic/v1/messages; it takes POST.' } });
    const genai = await call('DELETE', '/genai/v1beta/models/gemini-2.0-flash:generateContent');
    expect(genai).toMatchObject({ status: 405, allow: 'GET, HEAD, POST' });
    expect(genai.body).toEqual({ error: { code: 405, message: expect.stringContaining('it takes GET, HEAD, POST'), status: 'INVALID_ARGUMENT' } });
  });

  it('a URL no method serves is still a 404', async () => {
    expect(await call('GET', '/v1/chat/completion')).toMatchObject({ status: 404, allow: null, body: { error: { code: 'unknown_url' } } });
    expect(await call('GET', '/anthropic/v1/nothing')).toMatchObject({ status: 404, allow: null });
  });
});

describe('wrong-path hints in the 404', () => {
  it('a stored response tollgate does not have through the official OpenAI client: OpenAI\'s NotFoundError', async () => {
    const error = await tg.client.responses.retrieve('resp_123').catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    const message = (error as InstanceType<typeof OpenAI.NotFoundError>).message;
    expect(message).toContain("Response with id 'resp_123' not found.");
    expect(upstream.calls).toHaveLength(0);
  });

  it('the legacy Completions API through the official OpenAI client on /litellm, which does not serve it: told where it is', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/litellm`, apiKey: 'x', maxRetries: 0 });
    const error = await client.completions.create({ model: 'openai/gpt-4o-mini', prompt: 'hi' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as Error).message).toContain(`The legacy Completions API is served at ${tg.url}/v1/completions.`);
    expect(upstream.calls).toHaveLength(0);
  });

  it('an Anthropic client pointed at the bare gateway URL is told to use /anthropic', async () => {
    const client = new Anthropic({ baseURL: tg.url, apiKey: 'x', maxRetries: 0 });
    const error = await client.messages
      .create({ model: 'openai/gpt-4o-mini', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.NotFoundError);
    expect((error as Error).message).toContain(`use the /anthropic base URL (${tg.url}/anthropic) for Anthropic clients`);
  });

  it('a Google Gen AI client pointed at the bare gateway URL is told to use /genai', async () => {
    const ai = new GoogleGenAI({ apiKey: 'x', httpOptions: { baseUrl: tg.url, timeout: 15_000 } });
    const error = await ai.models.generateContent({ model: 'gemini-2.0-flash', contents: 'hi' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as InstanceType<typeof ApiError>).status).toBe(404);
    expect((error as Error).message).toContain(`use the /genai base URL (${tg.url}/genai)`);
  });

  it.each([
    ['/v1/messages/count_tokens', 'use the /anthropic base URL'],
    ['/v1/models/gemini-2.0-flash:streamGenerateContent', 'use the /genai base URL'],
    ['/litellm/v1/responses', 'The Responses API is served at http'],
    ['/litellm/messages', 'use the /anthropic base URL'],
  ])('POST %s gets a hint', async (path, hint) => {
    const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(404);
    const body = (await response.json()) as any;
    expect(body.error).toMatchObject({ type: 'invalid_request_error', code: 'unknown_url', message: expect.stringContaining(hint) });
  });

  it('any other unknown URL keeps the plain message', async () => {
    const response = await fetch(`${tg.url}/v1/nothing-here?x=1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(404);
    expect(((await response.json()) as any).error).toEqual({ message: 'Unknown request URL: POST /v1/nothing-here.', type: 'invalid_request_error', param: null, code: 'unknown_url' });
  });
});
