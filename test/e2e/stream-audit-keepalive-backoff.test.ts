import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Keep-alives open a streamed answer before its first event only while an attempt's upstream has answered 2xx and is
 * generating (README, "Keep-alives on silent streams"). Not while the call stage waits out a retry's back-off after
 * an attempt whose upstream answered 2xx and then broke before any content: the 2xx of an attempt that already
 * failed must not open the client's answer, or the next attempt's refusal (a 429, a 400) reaches the client as an
 * error event inside a 200 stream instead of its own status, which the client's SDK acts on (retries a 429).
 *
 * The plan in each case: `first` answers 429 with retry-after: 1 (that target is paused a second), `second` (its
 * fallback) answers 200 and event-stream headers and drops the connection before any event, and the retry pass
 * goes back to `first` after waiting out its pause, some ten keep-alive intervals. Each case starts a gateway of its
 * own, since the pause outlives the request.
 */

const INTERVAL = 100;

let first: ScriptedUpstream;
let second: ScriptedUpstream;
let tg: RunningGateway | null = null;

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];
const limited = { kind: 'error', status: 429, type: 'rate_limit_error', code: 'rate_limit_exceeded', message: 'Slow down.', headers: { 'retry-after': '1' } } as const;
const brokenAfterHeaders = { kind: 'break-after', chunks: 0 } as const;

beforeAll(async () => {
  [first, second] = await Promise.all([startOpenAIUpstream({ apiKey: 'sk-first' }), startOpenAIUpstream({ apiKey: 'sk-second' })]);
});
afterAll(async () => {
  await Promise.all([first?.close(), second?.close()]);
});
afterEach(async () => {
  // A fresh gateway per case: the 429 pause and the breakers are kept per target across requests.
  await tg?.stop();
  tg = null;
  first.reset();
  second.reset();
});

async function start(): Promise<RunningGateway> {
  tg = await startGateway({
    settings: { stream_keepalive_ms: INTERVAL, routing: { retry: { max_attempts: 3, initial_delay_ms: 1, max_delay_ms: 1, deadline_ms: 30_000 } } },
    providers: {
      first: { type: 'openai', base_url: `${first.url}/v1`, api_key: 'sk-first' },
      second: { type: 'openai', base_url: `${second.url}/v1`, api_key: 'sk-second' },
    },
    routes: { pair: { targets: [{ model: 'first/m' }], fallbacks: ['second/m'] } },
  });
  return tg;
}

/** A raw streamed POST: its status, its content type, when its head came (ms after the request) and the body as sent. */
async function raw(gateway: RunningGateway, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; headMs: number; text: string }> {
  const sent = performance.now();
  const response = await fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const headMs = performance.now() - sent;
  return { status: response.status, type: response.headers.get('content-type'), headMs, text: await response.text() };
}

function count(text: string, what: string): number {
  return text.split(what).length - 1;
}

describe('no keep-alive opens the answer during a retry back-off', () => {
  it('/v1: a 429 after the back-off reaches the OpenAI SDK as its status, not as an error event in a 200 stream', async () => {
    const gateway = await start();
    first.enqueue(limited, limited);
    second.enqueue(brokenAfterHeaders);
    const seen = await raw(gateway, '/v1/chat/completions', { model: 'pair', messages, stream: true });
    expect(first.calls).toHaveLength(2);
    expect(second.calls).toHaveLength(1);
    expect(seen.status).toBe(429);
    expect(seen.type).toContain('application/json');
    expect(seen.text).not.toContain('keep-alive');
    expect(JSON.parse(seen.text).error.type).toBe('rate_limit_error');
  });

  it('/v1: the OpenAI SDK raises a RateLimitError with the 429 and its retry-after', async () => {
    const gateway = await start();
    first.enqueue(limited, limited);
    second.enqueue(brokenAfterHeaders);
    const client = new OpenAI({ apiKey: 'none', baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const failure = await (async () => {
      const stream = await client.chat.completions.create({ model: 'pair', messages, stream: true });
      for await (const chunk of stream) void chunk;
    })().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.RateLimitError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(429);
    expect((failure as InstanceType<typeof OpenAI.APIError>).headers?.get('retry-after')).toBeTruthy();
  });

  it('/v1: a 400 after the back-off reaches the OpenAI SDK as a BadRequestError', async () => {
    const gateway = await start();
    first.enqueue(limited, { kind: 'error', status: 400, type: 'invalid_request_error', code: 'invalid_value', message: 'Bad request.' });
    second.enqueue(brokenAfterHeaders);
    const client = new OpenAI({ apiKey: 'none', baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const failure = await (async () => {
      const stream = await client.chat.completions.create({ model: 'pair', messages, stream: true });
      for await (const chunk of stream) void chunk;
    })().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(OpenAI.BadRequestError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    expect(first.calls).toHaveLength(2);
  });

  it('/anthropic: no event: ping during the back-off; the Anthropic SDK gets the 429 status', async () => {
    const gateway = await start();
    first.enqueue(limited, limited);
    second.enqueue(brokenAfterHeaders);
    const body = { model: 'pair', max_tokens: 100, messages, stream: true };
    const seen = await raw(gateway, '/anthropic/v1/messages', body, { 'anthropic-version': '2023-06-01' });
    expect(seen.status).toBe(429);
    expect(seen.text).not.toContain('event: ping');
    expect(JSON.parse(seen.text).error.type).toBe('rate_limit_error');
  });

  it('/anthropic: the Anthropic SDK raises a RateLimitError', async () => {
    const gateway = await start();
    first.enqueue(limited, limited);
    second.enqueue(brokenAfterHeaders);
    const client = new Anthropic({ apiKey: 'none', baseURL: `${gateway.url}/anthropic`, maxRetries: 0 });
    const failure = await client.messages
      .stream({ model: 'pair', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] })
      .finalMessage()
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Anthropic.RateLimitError);
    expect((failure as InstanceType<typeof Anthropic.APIError>).status).toBe(429);
  });

  it('still keeps a silent stream alive once the retry after the back-off has its 2xx', async () => {
    const gateway = await start();
    first.enqueue(limited, { kind: 'silent-start', delayMs: 450 });
    second.enqueue(brokenAfterHeaders);
    const seen = await raw(gateway, '/v1/chat/completions', { model: 'pair', messages, stream: true });
    expect(seen.status).toBe(200);
    expect(seen.type).toContain('text/event-stream');
    // The head went out with the first keep-alive of the answering attempt, after the second's pause, not during it.
    expect(seen.headMs).toBeGreaterThanOrEqual(900);
    expect(count(seen.text.slice(0, seen.text.indexOf('data: ')), ': keep-alive\n\n')).toBeGreaterThanOrEqual(2);
    expect(seen.text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(first.calls).toHaveLength(2);
    expect(second.calls).toHaveLength(1);
  });

  it('still keeps it alive for the OpenAI SDK, which gets the answer of the retry', async () => {
    const gateway = await start();
    first.enqueue(limited, { kind: 'silent-start', delayMs: 450 });
    second.enqueue(brokenAfterHeaders);
    const client = new OpenAI({ apiKey: 'none', baseURL: `${gateway.url}/v1`, maxRetries: 0 });
    const { data, response } = await client.chat.completions.create({ model: 'pair', messages, stream: true }).withResponse();
    let text = '';
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    expect(response.headers.get('x-tollgate-provider')).toBe('first');
    expect(response.headers.get('x-tollgate-attempts')).toBe('3');
  });
});
