// A provider's URL is the operator's business: an upstream nothing listens at, or one that cuts its connection
// before or in the middle of an answer, fails the request with a message that says what happened and which provider
// it was, never where that provider lives (an operator's private endpoint, a proxy). The operator's log and the
// request log keep the URL tried. Through the official OpenAI, Anthropic and Gen AI SDKs, streamed and not.
import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let claude: Anthropic;
let ai: GoogleGenAI;
let deadPort: number;
const logged: string[] = [];

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  deadPort = await freePort();
  const log = pino({ level: 'debug' }, { write: (line: string) => void logged.push(line) });
  tg = await startGateway(
    {
      // One attempt: the failure is the client's to see, not retried away.
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: {
        openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' },
        gone: { type: 'openai', base_url: `http://127.0.0.1:${deadPort}/v1`, api_key: 'sk-gone-upstream' },
      },
    },
    {},
    { log },
  );
  claude = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-key', maxRetries: 0, timeout: 10_000 });
  ai = new GoogleGenAI({ apiKey: 'client-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 10_000 } });
}, 30_000);

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => {
  upstream.reset();
  logged.length = 0;
});

/** Every way the upstream's whereabouts could show: its host and port, its origin, its path. */
function expectNoUpstreamAddress(text: string, port: number): void {
  expect(text).not.toContain(`127.0.0.1:${port}`);
  expect(text).not.toContain(`:${port}/`);
  expect(text).not.toContain('http://');
  expect(text).not.toContain('/v1/chat/completions');
}

const UNREACHABLE = /^gone: Could not reach the upstream \(ECONNREFUSED: connection refused: nothing is listening there\); check providers\.gone\.base_url\.$/;
const CUT_MID_ANSWER = /^openai: The connection to the upstream broke in the middle of its answer \(/;
const CUT_BEFORE_ANSWER = /^openai: Could not reach the upstream or the connection broke \(/;

/** The OpenAI SDK's error for a request, streamed (read to its end) or not. */
async function openaiFailure(model: string, stream: boolean): Promise<InstanceType<typeof OpenAI.APIError>> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'one two three four five six' }];
  const result = await (async () => {
    if (!stream) return tg.client.chat.completions.create({ model, messages });
    for await (const _chunk of await tg.client.chat.completions.create({ model, messages, stream: true })) void _chunk;
    return null;
  })().catch((err: unknown) => err);
  expect(result).toBeInstanceOf(OpenAI.APIError);
  return result as InstanceType<typeof OpenAI.APIError>;
}

/** The Anthropic SDK's error on /anthropic, streamed (read to its end) or not. */
async function claudeFailure(model: string, stream: boolean): Promise<InstanceType<typeof Anthropic.APIError>> {
  const question = { model, max_tokens: 100, messages: [{ role: 'user' as const, content: 'one two three four five six' }] };
  const result = await (async () => {
    if (!stream) return claude.messages.create(question);
    for await (const _event of await claude.messages.create({ ...question, stream: true })) void _event;
    return null;
  })().catch((err: unknown) => err);
  expect(result).toBeInstanceOf(Anthropic.APIError);
  return result as InstanceType<typeof Anthropic.APIError>;
}

/** The Gen AI SDK's error on /genai, streamed (read to its end) or not. */
async function geminiFailure(model: string, stream: boolean): Promise<ApiError> {
  const question = { model, contents: 'one two three four five six' };
  const result = await (async () => {
    if (!stream) return ai.models.generateContent(question);
    for await (const _event of await ai.models.generateContentStream(question)) void _event;
    return null;
  })().catch((err: unknown) => err);
  expect(result).toBeInstanceOf(ApiError);
  return result as ApiError;
}

/** A raw request's whole answer as text (an SSE stream read to its end), with its status and request id. */
async function raw(path: string, body: unknown): Promise<{ status: number; text: string; requestId: string }> {
  const response = await fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer client-key' }, body: JSON.stringify(body) });
  return { status: response.status, text: await response.text(), requestId: response.headers.get('x-request-id') ?? '' };
}

async function logEntryOf(requestId: string): Promise<{ error_message?: string }> {
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const found = await jsonRequest(tg.url, 'GET', `/api/logs/${requestId}`);
    if (found.status === 200) return found.body as { error_message?: string };
    await new Promise((done) => setTimeout(done, 50));
  }
  throw new Error(`no log entry for ${requestId}`);
}

/** The operator's log lines of failed requests. */
function operatorLines(): string[] {
  return logged.filter((line) => /"status":5\d\d/.test(line));
}

describe('an upstream nothing listens at: the client is told which provider could not be reached, not where it is', () => {
  const address = () => `http://127.0.0.1:${deadPort}/v1/chat/completions`;

  it('OpenAI SDK on /v1, JSON and stream: 502 upstream_unreachable without the URL', async () => {
    for (const stream of [false, true]) {
      const error = await openaiFailure('gone/gpt-4o-mini', stream);
      expect(error.status).toBe(502);
      expect(error.code).toBe('upstream_unreachable');
      expect(error.type).toBe('upstream_error');
      const message = (error.error as { message: string }).message;
      expect(message).toMatch(UNREACHABLE);
      expectNoUpstreamAddress(error.message, deadPort);
      expectNoUpstreamAddress(JSON.stringify(error.error), deadPort);
    }
  });

  it('Anthropic SDK on /anthropic, JSON and stream: the same message in the Anthropic shape', async () => {
    for (const stream of [false, true]) {
      const error = await claudeFailure('gone/gpt-4o-mini', stream);
      expect(error.status).toBe(502);
      expect((error.error as { error: { message: string } }).error.message).toMatch(UNREACHABLE);
      expectNoUpstreamAddress(error.message, deadPort);
    }
  });

  it('Gen AI SDK on /genai, JSON and stream: the same message in the Google shape', async () => {
    for (const stream of [false, true]) {
      const error = await geminiFailure('gone/gpt-4o-mini', stream);
      expect(error.status).toBe(502);
      const body = JSON.parse(error.message.slice(error.message.indexOf('{'))) as { error: { message: string } };
      expect(body.error.message).toMatch(UNREACHABLE);
      expectNoUpstreamAddress(error.message, deadPort);
    }
  });

  it('the raw answers hold no trace of the URL; the operator log and the request log keep it', async () => {
    const answers = [
      await raw('/v1/chat/completions', { model: 'gone/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
      await raw('/anthropic/v1/messages', { model: 'gone/gpt-4o-mini', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] }),
      await raw('/genai/v1beta/models/gone/gpt-4o-mini:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    ];
    for (const answer of answers) {
      expect(answer.status).toBe(502);
      expect(answer.text).toContain('gone: Could not reach the upstream (ECONNREFUSED');
      expectNoUpstreamAddress(answer.text, deadPort);
      const entry = await logEntryOf(answer.requestId);
      expect(entry.error_message).toContain(`gone: Could not reach the upstream at ${address()} (ECONNREFUSED`);
    }
    const lines = operatorLines();
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) expect(line).toContain(`Could not reach the upstream at ${address()}`);
    expect(logged.join('\n')).not.toContain('sk-gone-upstream');
  });
});

describe('an upstream that cuts the connection: the client is told it broke, not where the upstream is', () => {
  const port = () => upstream.port;

  it('mid-stream, on all three routes: an error event without the URL, after the text that came', async () => {
    upstream.enqueue({ kind: 'break-after', chunks: 2 });
    const openai = await openaiFailure('openai/gpt-4o-mini', true);
    expect((openai.error as { message: string }).message).toMatch(CUT_MID_ANSWER);
    expectNoUpstreamAddress(openai.message, port());

    upstream.enqueue({ kind: 'break-after', chunks: 2 });
    const anthropic = await claudeFailure('openai/gpt-4o-mini', true);
    expect((anthropic.error as { error: { message: string } }).error.message).toMatch(CUT_MID_ANSWER);
    expectNoUpstreamAddress(anthropic.message, port());

    upstream.enqueue({ kind: 'break-after', chunks: 2 });
    const gemini = await geminiFailure('openai/gpt-4o-mini', true);
    expect(gemini.message).toMatch(/openai: The connection to the upstream broke in the middle of its answer \(/);
    expectNoUpstreamAddress(gemini.message, port());
  });

  it('mid-stream, raw: the SSE error event holds no URL; the operator log and the request log keep it', async () => {
    const requests: Array<[string, unknown]> = [
      ['/v1/chat/completions', { model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'one two three four five six' }] }],
      ['/anthropic/v1/messages', { model: 'openai/gpt-4o-mini', stream: true, max_tokens: 50, messages: [{ role: 'user', content: 'one two three four five six' }] }],
      ['/genai/v1beta/models/openai/gpt-4o-mini:streamGenerateContent?alt=sse', { contents: [{ role: 'user', parts: [{ text: 'one two three four five six' }] }] }],
    ];
    for (const [path, body] of requests) {
      upstream.enqueue({ kind: 'break-after', chunks: 2 });
      const answer = await raw(path, body);
      // The stream had begun: a 200 whose last event is the error.
      expect(answer.status).toBe(200);
      expect(answer.text).toContain('openai: The connection to the upstream broke in the middle of its answer (');
      expectNoUpstreamAddress(answer.text, port());
      const entry = await logEntryOf(answer.requestId);
      expect(entry.error_message).toContain(`openai: The connection to the upstream at ${upstream.url}/v1/chat/completions broke in the middle of its answer (`);
    }
    const lines = operatorLines();
    expect(lines.length).toBeGreaterThanOrEqual(3);
    for (const line of lines) expect(line).toContain(`${upstream.url}/v1/chat/completions`);
  });

  it('a JSON answer cut half way: 502 upstream_connection_error without the URL', async () => {
    upstream.enqueue({ kind: 'break-after', chunks: 1 });
    const openai = await openaiFailure('openai/gpt-4o-mini', false);
    expect(openai.status).toBe(502);
    expect(openai.code).toBe('upstream_connection_error');
    expect((openai.error as { message: string }).message).toMatch(CUT_MID_ANSWER);
    expectNoUpstreamAddress(openai.message, port());

    upstream.enqueue({ kind: 'break-after', chunks: 1 });
    const anthropic = await claudeFailure('openai/gpt-4o-mini', false);
    expect(anthropic.status).toBe(502);
    expect((anthropic.error as { error: { message: string } }).error.message).toMatch(CUT_MID_ANSWER);
    expectNoUpstreamAddress(anthropic.message, port());
  });

  it('before the first byte (a reset), streamed or not: 502 without the URL', async () => {
    for (const stream of [false, true]) {
      upstream.enqueue({ kind: 'reset' });
      const openai = await openaiFailure('openai/gpt-4o-mini', stream);
      expect(openai.status).toBe(502);
      expect((openai.error as { message: string }).message).toMatch(CUT_BEFORE_ANSWER);
      expectNoUpstreamAddress(openai.message, port());

      upstream.enqueue({ kind: 'reset' });
      const anthropic = await claudeFailure('openai/gpt-4o-mini', stream);
      expect(anthropic.status).toBe(502);
      expect((anthropic.error as { error: { message: string } }).error.message).toMatch(CUT_BEFORE_ANSWER);
      expectNoUpstreamAddress(anthropic.message, port());

      upstream.enqueue({ kind: 'reset' });
      const gemini = await geminiFailure('openai/gpt-4o-mini', stream);
      expect(gemini.status).toBe(502);
      expect(gemini.message).toMatch(/openai: Could not reach the upstream or the connection broke \(/);
      expectNoUpstreamAddress(gemini.message, port());
    }
  });
});
