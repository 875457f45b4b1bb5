import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

/**
 * What one attempt's answer leaves behind: an attempt that failed before the client got anything is charged nothing
 * and passes nothing on to the attempt that answers. Every model here costs $1 a token, so a charge in dollars is
 * the tokens charged.
 */

const PRICE = { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 };
const SSE = { 'content-type': 'text/event-stream' };
const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

let openai: ScriptedUpstream;
let gemini: GeminiUpstream;
let anthropic: AnthropicUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  [openai, gemini, anthropic] = await Promise.all([
    startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 }),
    startGeminiUpstream({ apiKey: 'gemini-key' }),
    startAnthropicUpstream({ apiKey: 'sk-ant-upstream' }),
  ]);
  tg = await startGateway({
    settings: { routing: { breaker: { enabled: false } } },
    providers: {
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-upstream', prices: { m: PRICE } },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key', prices: { 'gemini-x': PRICE } },
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
    },
    routes: {
      'gemini-then-openai': { targets: [{ model: 'gemini/gemini-x', weight: 1 }], fallbacks: ['openai/m'] },
      'anthropic-then-openai': { targets: [{ model: 'anthropic/claude-x', weight: 1 }], fallbacks: ['openai/m'] },
      'gemini-only': { targets: [{ model: 'gemini/gemini-x', weight: 1 }], retry: { max_attempts: 1 } },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await Promise.all([openai?.close(), gemini?.close(), anthropic?.close()]);
});
beforeEach(() => {
  openai.reset();
  gemini.reset();
  anthropic.reset();
});

async function newKey(name: string): Promise<{ id: string; client: OpenAI }> {
  const key = (await jsonRequest(tg.url, 'POST', '/api/keys', { name })).body as { id: string; key: string };
  return { id: key.id, client: new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key.key, maxRetries: 0 }) };
}

async function spendOf(keyId: string): Promise<number> {
  return ((await jsonRequest(tg.url, 'GET', `/api/keys/${keyId}`)).body as { spend: number }).spend;
}

/** An OpenAI-format stream that reports no usage (a compatible server that ignores include_usage). */
function openaiStreamWithoutUsage(text: string): string {
  const chunk = (delta: Record<string, unknown>, finish: string | null) =>
    `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  return chunk({ role: 'assistant', content: text }, null) + chunk({}, 'stop') + 'data: [DONE]\n\n';
}

describe('usage of a failed attempt', () => {
  it('is not charged to the request an attempt without usage answered', async () => {
    const { id, client } = await newKey('carried-usage');
    // Gemini counts 5000 prompt tokens in its first event, then the stream ends without a candidate or finishReason:
    // the attempt fails before the client got a byte, and the fallback answers without reporting usage.
    gemini.enqueue({ kind: 'raw', status: 200, headers: SSE, body: `data: ${JSON.stringify({ usageMetadata: { promptTokenCount: 5000, totalTokenCount: 5000 }, responseId: 'r1' })}\n\n` });
    openai.enqueue({ kind: 'raw', status: 200, headers: SSE, body: openaiStreamWithoutUsage('hello') });
    const before = await spendOf(id);
    const stream = await client.chat.completions.create({ model: 'gemini-then-openai', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('hello');
    expect(gemini.calls).toHaveLength(1);
    expect(openai.calls).toHaveLength(1);
    // The answering attempt's tokens, as the gateway counted them (a few for "hi" and "hello"), not Gemini's 5000.
    const charged = (await spendOf(id)) - before;
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThan(100);
  });
});

/** Anthropic SSE frames: `event: <type>` and its data. */
function anthropicStream(...events: Array<[string, Record<string, unknown>]>): string {
  return events.map(([type, data]) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`).join('');
}

describe('an upstream stream without an answer', () => {
  const hollow = [
    ['ping then message_stop', anthropicStream(['ping', {}], ['message_stop', {}])],
    ['a message_start whose message is null', anthropicStream(['message_start', { message: null }], ['message_stop', {}])],
  ] as const;

  it.each(hollow)('Anthropic, %s: a failed attempt, so the fallback answers', async (_name, body) => {
    anthropic.enqueue({ kind: 'raw', status: 200, headers: SSE, body });
    const stream = await tg.client.chat.completions.create({ model: 'anthropic-then-openai', messages, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    expect(anthropic.calls).toHaveLength(1);
    expect(openai.calls).toHaveLength(1);
  });

  it.each(hollow)('Anthropic, %s: with nowhere else to go, a 502 naming the provider', async (_name, body) => {
    anthropic.setMode({ kind: 'raw', status: 200, headers: SSE, body });
    try {
      const error = await tg.client.chat.completions.create({ model: 'anthropic/claude-x', messages, stream: true }).then(
        () => null,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(OpenAI.APIError);
      expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
      expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('invalid_upstream_response');
      expect((error as InstanceType<typeof OpenAI.APIError>).message).toMatch(/anthropic: /);
    } finally {
      anthropic.setMode({ kind: 'ok' });
    }
  });

  it('Gemini, usage and no candidate, for a client that asked for usage: a 502, not a 200 stream that then fails', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, headers: SSE, body: `data: ${JSON.stringify({ usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 }, responseId: 'r2' })}\n\n` });
    const error = await tg.client.chat.completions.create({ model: 'gemini-only', messages, stream: true, stream_options: { include_usage: true } }).then(
      async (stream) => {
        for await (const chunk of stream) void chunk;
        return null;
      },
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('invalid_upstream_response');
  });

  it('Gemini, an empty body: a failed attempt, so the fallback answers', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, headers: SSE, body: '' });
    const stream = await tg.client.chat.completions.create({ model: 'gemini-then-openai', messages, stream: true, stream_options: { include_usage: true } });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe('echo: hi');
    expect(openai.calls).toHaveLength(1);
  });
});

describe('a Gemini answer (not streamed) without a candidate', () => {
  /** No candidates, no promptFeedback.blockReason: usage and an id, nothing to answer with. */
  const hollow = JSON.stringify({ usageMetadata: { promptTokenCount: 4, totalTokenCount: 4 }, responseId: 'r-hollow' });

  it('is a failed attempt, so the fallback answers', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, body: hollow });
    const completion = await tg.client.chat.completions.create({ model: 'gemini-then-openai', messages });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(gemini.calls).toHaveLength(1);
    expect(openai.calls).toHaveLength(1);
  });

  it('with nowhere else to go, is a 502 naming the provider', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, body: hollow });
    const error = await tg.client.chat.completions.create({ model: 'gemini-only', messages }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(502);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('invalid_upstream_response');
    expect((error as InstanceType<typeof OpenAI.APIError>).message).toMatch(/gemini: /);
  });

  it('a prompt blocked by promptFeedback.blockReason is still an empty content_filter answer', async () => {
    gemini.enqueue({ kind: 'raw', status: 200, body: JSON.stringify({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 4, totalTokenCount: 4 } }) });
    const completion = await tg.client.chat.completions.create({ model: 'gemini-then-openai', messages });
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: '' } });
    expect(openai.calls).toHaveLength(0);
  });
});

describe("Gemini's failure finish reasons", () => {
  let cached: RunningGateway;
  beforeAll(async () => {
    cached = await startGateway({
      cache: { mode: 'on', semantic: { enabled: false } },
      providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-key' } },
    });
  });
  afterAll(async () => {
    await cached?.stop();
  });

  /** A generateContent answer (or, streamed, its one event) that ended with `reason` and no parts. */
  const answer = (reason: string) => ({
    candidates: [{ content: { role: 'model', parts: reason === 'STOP' ? [{ text: 'fine' }] : [] }, finishReason: reason, index: 0 }],
    usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 0, totalTokenCount: 3 },
    responseId: `r-${reason}`,
  });
  const script = (reason: string, stream: boolean) =>
    stream ? { kind: 'raw' as const, status: 200, headers: SSE, body: `data: ${JSON.stringify(answer(reason))}\n\n` } : { kind: 'raw' as const, status: 200, body: JSON.stringify(answer(reason)) };

  /** The finish of one request's only choice, as the OpenAI SDK gives it, and the cache header. */
  async function ask(content: string, stream: boolean): Promise<{ finish: unknown; native: unknown; cache: string | null }> {
    const body = { model: 'gemini/gemini-2.5-flash', messages: [{ role: 'user' as const, content }] };
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
    it.each(['MALFORMED_FUNCTION_CALL', 'UNEXPECTED_TOOL_CALL', 'OTHER'])(`%s (stream: ${stream}) is not cached, and the client sees it`, async (reason) => {
      const content = `${reason} ${stream}`;
      gemini.enqueue(script(reason, stream), script(reason, stream));
      const first = await ask(content, stream);
      // OpenAI's finish reasons have no word for a failed call: `stop`, as LiteLLM says, and the reason beside it.
      expect(first).toMatchObject({ finish: 'stop', native: reason });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const second = await ask(content, stream);
      expect(second.cache).not.toMatch(/^hit/);
      expect(gemini.calls).toHaveLength(2);
    });
  }

  it('STOP is cached as before, without a native_finish_reason', async () => {
    gemini.enqueue(script('STOP', false));
    const first = await ask('plain stop', false);
    expect(first).toMatchObject({ finish: 'stop', native: undefined });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await ask('plain stop', false)).cache).toBe('hit-exact');
    expect(gemini.calls).toHaveLength(1);
  });
});
