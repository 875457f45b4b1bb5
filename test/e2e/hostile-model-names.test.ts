import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { Observable } from 'rxjs';
import { defer } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRequestContext } from '../../src/core/context.js';
import { serveAnswer } from '../../src/http/answer-stream.js';
import { createLog } from '../../src/log.js';
import type { ResponseEvent } from '../../src/core/canonical.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Each of these once reached a response header (x-tollgate-model) and killed the process with ERR_INVALID_CHAR, or
// (a 100 KB name) made the answer's headers too large for any client to read.
const HOSTILE: Array<[string, string]> = [
  ['a NUL', 'openai/gpt\u0000x'],
  ['CR/LF header injection', 'openai/gpt-4o\r\nX-Injected: 1'],
  ['a lone surrogate', 'openai/\ud800'],
  ['a character above U+00FF', 'openai/gpt-€'],
  ['a Latin-1 character', 'openai/gpt-é'],
  ['a tab', 'openai/gpt\t4o'],
  ['100,000 characters', `openai/${'x'.repeat(100_000)}`],
];

let openaiUpstream: ScriptedUpstream;
let anthropicUpstream: AnthropicUpstream;
let tg: RunningGateway;
let uncaught: unknown[] = [];
const onUncaught = (err: unknown): void => {
  uncaught.push(err);
};

beforeAll(async () => {
  process.on('uncaughtException', onUncaught);
  openaiUpstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
  anthropicUpstream = await startAnthropicUpstream({ apiKey: 'sk-ant-up' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${openaiUpstream.url}/v1`, api_key: 'sk-up' },
      anthropic: { base_url: `${anthropicUpstream.url}/v1`, api_key: 'sk-ant-up' },
    },
  });
});
afterAll(async () => {
  process.off('uncaughtException', onUncaught);
  await tg.stop();
  await openaiUpstream.close();
  await anthropicUpstream.close();
});

async function post(path: string, body: unknown): Promise<{ status: number; headers: Headers; json: any }> {
  const response = await fetch(`${tg.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  return { status: response.status, headers: response.headers, json: await response.json() };
}

const messages = [{ role: 'user' as const, content: 'hi' }];

describe.each(HOSTILE)('a model name with %s', (_what, model) => {
  it('is a 400 in the OpenAI shape on /v1, the bare paths, /litellm and embeddings, never a header', async () => {
    for (const path of ['/v1/chat/completions', '/chat/completions', '/litellm/v1/chat/completions']) {
      const answer = await post(path, { model, messages, stream: true });
      expect(answer.status).toBe(400);
      expect(answer.json.error).toMatchObject({ type: 'invalid_request_error', param: 'model', code: 'invalid_model_name' });
      expect(answer.json.error.message.length).toBeLessThan(300);
      expect(answer.headers.get('x-injected')).toBeNull();
      expect(answer.headers.get('x-tollgate-model')).toBeNull();
    }
    const embeddings = await post('/v1/embeddings', { model, input: 'hi' });
    expect(embeddings.status).toBe(400);
    expect(embeddings.json.error.param).toBe('model');
    const fallback = await post('/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages, fallbacks: [model] });
    expect(fallback.status).toBe(400);
    expect(fallback.json.error).toMatchObject({ param: 'fallbacks', code: 'invalid_model_name' });
  });

  it('is a typed BadRequestError from the official OpenAI client', async () => {
    const error = await tg.client.chat.completions.create({ model, messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
  });

  it('is a 400 in the Anthropic shape on /anthropic, with an Anthropic target too', async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'unused', maxRetries: 0, timeout: 5000 });
    const bare = model.replace(/^openai\//, 'anthropic/');
    for (const name of [model, bare]) {
      const error = await client.messages.create({ model: name, max_tokens: 5, messages }).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      const counted = await client.messages.countTokens({ model: name, messages }).catch((err: unknown) => err);
      expect(counted).toBeInstanceOf(Anthropic.BadRequestError);
    }
    const raw = await post('/anthropic/v1/messages', { model, max_tokens: 5, messages });
    expect(raw.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(anthropicUpstream.calls).toHaveLength(0);
  });

  it('is a 400 in the Gemini shape on /genai', async () => {
    // A lone surrogate has no UTF-8 form: the closest a URL can carry is its invalid three-byte encoding.
    const encoded = model.includes('\ud800') ? model.replace('\ud800', '%ED%A0%80') : encodeURIComponent(model);
    const response = await fetch(`${tg.url}/genai/v1beta/models/${encoded}:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
      signal: AbortSignal.timeout(5000),
    });
    if (encoded.length > 16_000) {
      // Past Node's header size limit the URL itself is refused before any route sees it.
      expect(response.status).toBe(431);
      return;
    }
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: 400, status: 'INVALID_ARGUMENT' } });
  });
});

describe('the body shapes that once crashed or hung', () => {
  it('refuses models that are not strings on /anthropic, and content [null] on /v1, each in its shape', async () => {
    for (const model of [[], [null], {}, 42]) {
      const answer = await post('/anthropic/v1/messages', { model, max_tokens: 5, messages });
      expect(answer.status).toBe(400);
      expect(answer.json.type).toBe('error');
    }
    const nullPart = await post('/v1/chat/completions', { model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: [null] }] });
    expect(nullPart.status).toBe(400);
    expect(nullPart.json.error).toMatchObject({ param: 'messages[0].content[0]', type: 'invalid_request_error' });
    const numberContent = await post('/v1/chat/completions', { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 7 }] });
    expect(numberContent.status).toBe(400);
    expect(await post('/genai/v1beta/models/%00:generateContent', { contents: [{ parts: [{ text: 'hi' }] }] })).toMatchObject({ status: 400 });
  });

  it('the gateway is alive and serving afterwards, and nothing escaped as an uncaught error', async () => {
    const completion = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'still here' }] });
    expect(completion.choices[0]?.message.content).toBe('echo: still here');
    const genai = new GoogleGenAI({ apiKey: 'unused', httpOptions: { baseUrl: `${tg.url}/genai` } });
    const answer = await genai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'and here' });
    expect(answer.text).toBe('echo: and here');
    expect(uncaught).toEqual([]);
  });
});

describe('a writer that throws fails its own answer only', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const ctx = createRequestContext({ dialect: 'openai', config: null as never, request: { model: 'm', messages: [] } });
      // A header value Node refuses, as a stage might set one from a bad config value.
      ctx.responseHeaders['x-bad'] = req.url === '/bad-header' ? 'a\r\nb' : 'fine';
      const answer: Observable<ResponseEvent> = defer(async () => ({ kind: 'completion', completion: { id: 'x' } }) as unknown as ResponseEvent);
      void serveAnswer(res, ctx, answer, createLog('silent'), {
        error(err: unknown) {
          res.writeHead(500, { 'content-type': 'application/json', ...ctx.responseHeaders });
          res.end(JSON.stringify({ error: { message: (err as Error).message } }));
        },
        complete() {
          res.writeHead(200, { 'content-type': 'application/json', ...ctx.responseHeaders });
          res.end('{}');
        },
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((done) => server.close(() => done())));

  it('answers 500 through the error writer without the bad header, and the process lives on', async () => {
    uncaught = [];
    const bad = await fetch(`${url}/bad-header`);
    expect(bad.status).toBe(500);
    expect(bad.headers.get('x-bad')).toBeNull();
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe('Internal gateway error.');
    const good = await fetch(`${url}/good`);
    expect(good.status).toBe(200);
    expect(good.headers.get('x-bad')).toBe('fine');
    await new Promise((done) => setTimeout(done, 50));
    expect(uncaught).toEqual([]);
  });
});
