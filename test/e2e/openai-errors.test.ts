import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import { freePort } from '../helpers/net.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let deadPort: number;


beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream-test' });
  deadPort = await freePort();
  tg = await startGateway(
    openAIConfig(upstream.url, {
      // One attempt and no breaker: these tests are about how each upstream failure reaches the client, not
      // about surviving it (test/e2e/routing-*.test.ts cover retries and breakers).
      settings: { max_body_bytes: 4096, routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: {
        openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' },
        // Same upstream, short timeouts, so timeout paths finish quickly.
        hasty: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test', timeouts: { first_byte_ms: 300, total_ms: 1500 } },
        gone: { type: 'openai', base_url: `http://127.0.0.1:${deadPort}/v1`, api_key: 'sk-x' },
        wrongkey: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-wrong' },
      },
    }),
  );
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi there' }];

async function postRaw(body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers, body });
  return { status: response.status, body: (await response.json()) as { error: Record<string, unknown> } };
}

function expectErrorShape(body: { error: Record<string, unknown> }): void {
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof body.error.message).toBe('string');
}

describe('request validation', () => {
  it('rejects malformed JSON with 400 invalid_json', async () => {
    const { status, body } = await postRaw('{"model": "openai/gpt-4o-mini", ');
    expect(status).toBe(400);
    expectErrorShape(body);
    expect(body.error.code).toBe('invalid_json');
    expect(body.error.type).toBe('invalid_request_error');
  });

  it('rejects a body that is not an object', async () => {
    const { status, body } = await postRaw('[1,2]');
    expect(status).toBe(400);
    expectErrorShape(body);
  });

  it('rejects a missing model or messages as BadRequestError naming the param', async () => {
    const noModel = tg.client.chat.completions.create({ messages } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    await expect(noModel).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(noModel).rejects.toMatchObject({ status: 400, param: 'model' });
    const noMessages = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini' } as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming);
    await expect(noMessages).rejects.toMatchObject({ status: 400, param: 'messages' });
    const emptyMessages = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [] });
    await expect(emptyMessages).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    expect(upstream.calls).toHaveLength(0);
  });

  it('answers 404 NotFoundError for a bare model no provider serves or an unknown provider', async () => {
    const bare = tg.client.chat.completions.create({ model: 'no-such-model-anywhere', messages });
    await expect(bare).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(bare).rejects.toMatchObject({ code: 'model_not_found', param: 'model' });
    const unknown = tg.client.chat.completions.create({ model: 'nosuch/gpt-4o-mini', messages });
    await expect(unknown).rejects.toMatchObject({ status: 404, code: 'provider_not_found' });
  });

  it('answers 401 AuthenticationError when no key is configured for the provider', async () => {
    const request = tg.client.chat.completions.create({ model: 'groq/llama-3.1-8b-instant', messages });
    await expect(request).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(request).rejects.toMatchObject({ code: 'provider_key_missing' });
    await expect(request).rejects.toThrow(/GROQ_API_KEY/);
  });

  it('rejects bodies over the size limit with 413', async () => {
    const big = 'x'.repeat(8000);
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: big }] });
    await expect(request).rejects.toMatchObject({ status: 413, code: 'request_too_large' });
    expect(upstream.calls).toHaveLength(0);
  });

  it('counts a chunked body (no Content-Length) against the limit too', async () => {
    const payload = JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'y'.repeat(8000) }] });
    const body = new ReadableStream({
      start(controller) {
        for (let i = 0; i < payload.length; i += 1000) controller.enqueue(new TextEncoder().encode(payload.slice(i, i + 1000)));
        controller.close();
      },
    });
    const response = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
    expect(upstream.calls).toHaveLength(0);
  });

  it('rejects a non-JSON content type with 415 in the OpenAI error shape', async () => {
    const { status, body } = await postRaw('hello', { 'content-type': 'text/plain' });
    expect(status).toBe(415);
    expectErrorShape(body);
  });

  describe('a compressed body (Content-Encoding)', () => {
    const chat = (content: string) => JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content }] });
    const send = (path: string, encoding: string, body: Buffer, extra: Record<string, string> = {}) =>
      fetch(`${tg.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': encoding, ...extra }, body });

    it.each([
      ['gzip', gzipSync],
      ['x-gzip', gzipSync],
      ['deflate', deflateSync],
      ['br', brotliCompressSync],
    ] as const)('%s is inflated and served, the upstream getting the request as sent', async (encoding, compress) => {
      const response = await send('/v1/chat/completions', encoding, compress(Buffer.from(chat(`packed with ${encoding}`))));
      expect(response.status, await response.clone().text()).toBe(200);
      expect(((await response.json()) as any).choices[0].message.content).toBe(`echo: packed with ${encoding}`);
      expect(upstream.calls).toHaveLength(1);
      expect(upstream.calls[0]?.headers['content-encoding']).toBeUndefined();
    });

    it('on /anthropic too, with the Anthropic shape for what is wrong in it', async () => {
      const headers = { 'anthropic-version': '2023-06-01' };
      const served = await send('/anthropic/v1/messages', 'gzip', gzipSync(JSON.stringify({ model: 'openai/gpt-4o-mini', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] })), headers);
      expect(served.status).toBe(200);
      const corrupt = await send('/anthropic/v1/messages', 'gzip', Buffer.from('not gzip at all'), headers);
      expect(corrupt.status).toBe(400);
      expect(await corrupt.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('not valid gzip') } });
    });

    it('is held to max_body_bytes once inflated: a 16 MB bomb of a few dozen bytes is a 413, without inflating it all', async () => {
      const bomb = brotliCompressSync(Buffer.alloc(16 * 1024 * 1024, 0x20));
      expect(bomb.length).toBeLessThan(4096);
      const started = Date.now();
      const response = await send('/v1/chat/completions', 'br', bomb);
      expect(response.status).toBe(413);
      expect(((await response.json()) as any).error).toMatchObject({ code: 'request_too_large', message: expect.stringContaining('once decompressed') });
      expect(Date.now() - started).toBeLessThan(1_000);
      expect(upstream.calls).toHaveLength(0);
    });

    it('a body that is not what its encoding says is a 400 naming the encoding', async () => {
      const response = await send('/v1/chat/completions', 'deflate', gzipSync(chat('hi')).subarray(0, 20));
      expect(response.status).toBe(400);
      const body = (await response.json()) as { error: Record<string, unknown> };
      expectErrorShape(body);
      expect(body.error).toMatchObject({ code: 'invalid_body', param: 'content-encoding', message: expect.stringContaining('not valid deflate') });
    });

    it('an encoding not supported (or several) is refused by name with 415, naming the ones that are', async () => {
      // Names of Object's own members too: a plain object of decompressors found Object itself under 'constructor'.
      for (const encoding of ['compress', 'zstd', 'gzip, br', 'constructor', '__proto__', 'tostring', 'hasownproperty']) {
        const response = await send('/v1/chat/completions', encoding, Buffer.from(chat('hi')));
        expect(response.status, encoding).toBe(415);
        expect(response.headers.get('accept-encoding')).toBe('gzip, deflate, br');
        const body = (await response.json()) as { error: Record<string, unknown> };
        expectErrorShape(body);
        expect(body.error).toMatchObject({ code: 'unsupported_media_type', param: 'content-encoding', message: expect.stringContaining(`'${encoding}' is not supported`) });
      }
      // Identity is no encoding at all.
      expect((await send('/v1/chat/completions', 'identity', Buffer.from(chat('hi')))).status).toBe(200);
    });
  });

  it('answers unknown paths with a 404 in the OpenAI error shape', async () => {
    const response = await fetch(`${tg.url}/v1/nothing-here`);
    expect(response.status).toBe(404);
    expectErrorShape((await response.json()) as { error: Record<string, unknown> });
  });
});

describe('upstream failures', () => {
  it('keeps the upstream status and message for 4xx', async () => {
    upstream.enqueue({ kind: 'error', status: 400, type: 'invalid_request_error', code: 'context_length_exceeded', message: 'too many tokens' });
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await expect(request).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(request).rejects.toMatchObject({ code: 'context_length_exceeded' });
    await expect(request).rejects.toThrow(/too many tokens/);
  });

  it('surfaces an upstream auth failure as AuthenticationError', async () => {
    const request = tg.client.chat.completions.create({ model: 'wrongkey/gpt-4o-mini', messages });
    await expect(request).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(request).rejects.toMatchObject({ code: 'invalid_api_key' });
  });

  it('surfaces an upstream 429 as RateLimitError with retry-after', async () => {
    upstream.enqueue({ kind: 'error', status: 429, type: 'requests', code: 'rate_limit_exceeded', message: 'slow down' });
    const error = await tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect((error as InstanceType<typeof OpenAI.RateLimitError>).headers.get('retry-after')).toBeTruthy();
  });

  it('keeps the upstream status for 5xx (InternalServerError)', async () => {
    upstream.enqueue({ kind: 'error', status: 503, type: 'server_error', message: 'overloaded' });
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await expect(request).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(request).rejects.toMatchObject({ status: 503 });
    await expect(request).rejects.toThrow(/overloaded/);
  });

  it('answers 502 when the upstream is unreachable', async () => {
    const request = tg.client.chat.completions.create({ model: 'gone/gpt-4o-mini', messages });
    await expect(request).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(request).rejects.toMatchObject({ status: 502, code: 'upstream_unreachable' });
  });

  it('answers 502 when the upstream resets the connection', async () => {
    upstream.enqueue({ kind: 'reset' });
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await expect(request).rejects.toMatchObject({ status: 502 });
  });

  it('answers 502 when the upstream sends a body that is not JSON', async () => {
    upstream.enqueue({ kind: 'bad-json' });
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages });
    await expect(request).rejects.toMatchObject({ status: 502, code: 'invalid_upstream_response' });
  });

  it('answers 504 when a stream sends nothing before the first-byte timeout', async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 2000 });
    const started = Date.now();
    const request = tg.client.chat.completions.create({ model: 'hasty/gpt-4o-mini', messages, stream: true });
    await expect(request).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(request).rejects.toMatchObject({ status: 504, code: 'upstream_timeout' });
    await expect(request).rejects.toThrow(/sent no response within 300 ms/);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('waits for a whole answer as long as total_ms allows (it comes with its headers), not first_byte_ms', async () => {
    // A non-streamed answer the upstream takes 800 ms to write (a reasoning model's minutes, scaled down): past the
    // 300 ms first-byte timeout, within the 1,500 ms total.
    upstream.enqueue({ kind: 'slow-headers', delayMs: 800 });
    const answer = await tg.client.chat.completions.create({ model: 'hasty/gpt-4o-mini', messages });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    // One that takes longer than total_ms is a 504 saying so.
    upstream.enqueue({ kind: 'slow-headers', delayMs: 3000 });
    const started = Date.now();
    const request = tg.client.chat.completions.create({ model: 'hasty/gpt-4o-mini', messages });
    await expect(request).rejects.toMatchObject({ status: 504, code: 'upstream_timeout' });
    await expect(request).rejects.toThrow(/did not finish within 1500 ms/);
    expect(Date.now() - started).toBeLessThan(2900);
  });

  it('ends a stream that outlives the total timeout with an SSE error the client raises', async () => {
    upstream.enqueue({ kind: 'slow-chunks', delayMs: 400 });
    const stream = await tg.client.chat.completions.create({
      model: 'hasty/gpt-4o-mini',
      messages: [{ role: 'user', content: 'one two three four five six seven eight' }],
      stream: true,
    });
    let text = '';
    const consume = async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    };
    await expect(consume()).rejects.toThrow(/did not finish within 1500 ms/);
    expect(text.length).toBeGreaterThan(0);
  });

  it('never lets a broken stream look complete: the client gets an error', async () => {
    upstream.enqueue({ kind: 'break-after', chunks: 2 });
    const stream = await tg.client.chat.completions.create({
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user', content: 'one two three four five six' }],
      stream: true,
    });
    const consume = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(consume()).rejects.toBeInstanceOf(OpenAI.APIError);
  });

  it('fails a streaming request before its first byte with a proper status, not a 200 stream', async () => {
    upstream.enqueue({ kind: 'error', status: 500, type: 'server_error', message: 'boom' });
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true });
    await expect(request).rejects.toBeInstanceOf(OpenAI.InternalServerError);
    await expect(request).rejects.toThrow(/boom/);
  });
});

describe('client hang-ups', () => {
  it('aborts the upstream request when the client closes mid-stream', async () => {
    upstream.enqueue({ kind: 'stall-after', chunks: 2 });
    const controller = new AbortController();
    const stream = await tg.client.chat.completions.create(
      { model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'one two three four' }], stream: true },
      { signal: controller.signal },
    );
    let seen = 0;
    const consume = async () => {
      for await (const _chunk of stream) {
        seen++;
        if (seen === 2) controller.abort();
      }
    };
    // The official client ends iteration quietly when its own signal aborts.
    await consume();
    expect(seen).toBe(2);
    expect(await upstream.waitForClose(0, 3000)).toBe(true);
    expect(upstream.calls[0]?.closedByClient).toBe(true);
  });

  it('aborts the upstream request when the client gives up on a non-streaming request', async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 5000 });
    const controller = new AbortController();
    const request = tg.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    await expect(request).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    expect(await upstream.waitForClose(0, 3000)).toBe(true);
  });
});
