import Anthropic from '@anthropic-ai/sdk';
import { calcPrice } from '@pydantic/genai-prices';
import OpenAI, { type APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { cohereEmbedTokens, cohereEmbedVector, startCohereUpstream, type CohereUpstream } from '../upstream/cohere-upstream.js';

let upstream: CohereUpstream;
let tg: RunningGateway;
const MODEL = 'cohere/command-a-03-2025';

beforeAll(async () => {
  upstream = await startCohereUpstream({ apiKey: 'co-upstream-key' });
  tg = await startGateway({
    providers: { cohere: { base_url: `${upstream.url}/v2`, api_key: 'co-upstream-key' } },
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
  });
});

afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

beforeEach(() => upstream.reset());

const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

async function lastLog(matches: (entry: any) => boolean): Promise<any> {
  // The log entry of a request without a gateway key is written after the answer; wait for it briefly.
  for (let i = 0; i < 50; i++) {
    const response = await fetch(`${tg.url}/api/logs?limit=1`);
    const body = (await response.json()) as any;
    if (body.data?.[0] && matches(body.data[0])) return body.data[0];
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('no request log entry');
}

describe('cohere through the gateway', () => {
  it('answers a text request and sends Cohere\'s native request', async () => {
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there' },
      ],
      max_tokens: 50,
      top_p: 0.5,
      stop: ['NEVER'],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hello there');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.model).toBe(MODEL);
    // The billed units: Cohere does not bill all it processes (the scripted upstream leaves the system prompt out).
    expect(completion.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 });
    const call = upstream.calls[0];
    expect(call?.path).toBe('/v2/chat');
    expect(call?.headers.authorization).toBe('Bearer co-upstream-key');
    expect(call?.body).toEqual({
      model: 'command-a-03-2025',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there' },
      ],
      max_tokens: 50,
      p: 0.5,
      stop_sequences: ['NEVER'],
    });
  });

  it("sends OpenAI's sampling values in the ranges Cohere takes", async () => {
    // top_p: 1 and the penalties at 0 are what OpenAI's playground writes in every code sample; Cohere takes p from
    // 0.01 to 0.99 and penalties from 0 to 1, and refuses the whole request otherwise.
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'hello there' }],
      top_p: 1,
      frequency_penalty: 0,
      presence_penalty: -0.5,
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hello there');
    expect(upstream.calls[0]?.body).toMatchObject({ p: 0.99, frequency_penalty: 0, presence_penalty: 0 });
    await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], top_p: 0, frequency_penalty: 2 });
    expect(upstream.calls[1]?.body).toMatchObject({ p: 0.01, frequency_penalty: 1 });
  });

  it('streams the answer and reports usage with include_usage', async () => {
    const stream = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'stream me please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(text).toBe('echo: stream me please');
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBe(4);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks[chunks.length - 1]?.usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
    expect(upstream.calls[0]?.body.stream).toBe(true);
    expect(upstream.calls[0]?.body).not.toHaveProperty('stream_options');
  });

  it('streams without a usage chunk when none was asked for, and still logs the reported usage', async () => {
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'count these four words' }], stream: true });
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.choices.length === 1 && !c.usage)).toBe(true);
    const entry = await lastLog((e) => e.stream === true && e.prompt_tokens === 7);
    expect(entry.completion_tokens).toBe(5);
  });

  it('runs a tool-call round trip, streamed and not', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'weather in Paris? use the tool' }];
    const first = await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const call = choice?.message.tool_calls?.[0];
    expect(call?.type).toBe('function');
    if (call?.type !== 'function') throw new Error('expected a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ query: 'weather in Paris? use the tool' });
    expect(upstream.calls[0]?.body.tools).toEqual([weather]);

    messages.push(choice!.message, { role: 'tool', tool_call_id: call.id, content: 'sunny, 24C' });
    const second = await tg.client.chat.completions.create({ model: MODEL, messages, tools: [weather] });
    expect(second.choices[0]?.message.content).toBe('echo: sunny, 24C');
    const sent = upstream.calls[1]?.body.messages;
    expect(sent[1]).toEqual({ role: 'assistant', tool_plan: 'I will use get_weather.', tool_calls: [{ id: call.id, type: 'function', function: { name: 'get_weather', arguments: call.function.arguments } }] });
    expect(sent[2]).toEqual({ role: 'tool', tool_call_id: call.id, content: 'sunny, 24C' });

    // Streamed, with the tool forced: arguments arrive in pieces that add up.
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Paris' }], tools: [weather], tool_choice: 'required', stream: true });
    let args = '';
    let pieces = 0;
    let name = '';
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        if (delta.function?.name) name = delta.function.name;
        if (delta.function?.arguments) {
          args += delta.function.arguments;
          pieces++;
        }
      }
    }
    expect(name).toBe('get_weather');
    expect(pieces).toBeGreaterThan(1);
    expect(JSON.parse(args)).toEqual({ query: 'Paris' });
    expect(upstream.calls[2]?.body.tool_choice).toBe('REQUIRED');
  });

  it('sends image parts in Cohere\'s native form', async () => {
    const url = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'what is it' }, { type: 'image_url', image_url: { url, detail: 'low' } }] }],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: what is it');
    expect(upstream.calls[0]?.body.messages[0].content).toEqual([
      { type: 'text', text: 'what is it' },
      { type: 'image_url', image_url: { url, detail: 'low' } },
    ]);
  });

  it('passes Cohere\'s errors on as typed OpenAI errors with status and message', async () => {
    upstream.enqueue({ kind: 'error', status: 400, message: 'invalid request: max_tokens is too large' });
    const bad = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as APIError).message).toBe('400 invalid request: max_tokens is too large');
    expect((bad as APIError).headers?.get('x-tollgate-provider')).toBe('cohere');

    upstream.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '7' } });
    const limited = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as APIError).message).toMatch(/^429 You are using a Trial key/);
    expect((limited as APIError).headers?.get('retry-after')).toBe('7');

    upstream.enqueue({ kind: 'error', status: 503 });
    const down = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
    expect((down as APIError).status).toBe(503);
  });

  it('maps a wrong upstream key to a 401 authentication error', async () => {
    const other = await startGateway({
      providers: { cohere: { base_url: `${upstream.url}/v2`, api_key: 'wrong-key' } },
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    });
    try {
      const error = await other.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
      expect((error as APIError).message).toBe('401 invalid api token');
    } finally {
      await other.stop();
    }
  });

  it('refuses a request Cohere cannot serve before calling it', async () => {
    const error = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], n: 2 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(upstream.calls).toHaveLength(0);
  });

  it("refuses a PDF with a 400 that says Cohere takes documents only as text, in the client's own shape", async () => {
    const pdf = Buffer.from('%PDF-1.4\n%%EOF\n').toString('base64');
    const openai = await tg.client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: [{ type: 'text', text: 'read' }, { type: 'file', file: { filename: 'a.pdf', file_data: `data:application/pdf;base64,${pdf}` } }] }] })
      .catch((e: unknown) => e as APIError);
    expect(openai).toBeInstanceOf(OpenAI.BadRequestError);
    expect((openai as APIError).message).toMatch(/file of type application\/pdf.*Cohere's Chat API takes documents only as text/);
    expect(((openai as APIError).error as any)?.param).toBe('messages[0].content[1]');

    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const refused = await anthropic.messages
      .create({ model: MODEL, max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf } }, { type: 'text', text: 'summarise' }] }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.BadRequestError);
    expect((refused as InstanceType<typeof Anthropic.BadRequestError>).message).toMatch(/Cohere's Chat API takes documents only as text/);
    expect(upstream.calls).toHaveLength(0);
  });

  it('records the catalogue price of the reported usage, cache hits included', async () => {
    upstream.setCachedTokens(4);
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'price this answer please' }] });
    expect(completion.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 } });
    const expected = calcPrice({ input_tokens: 7, output_tokens: 5, cache_read_tokens: 4 }, 'command-a-03-2025', { providerId: 'cohere' });
    const log = await lastLog((entry) => entry.prompt_tokens === 7 && entry.status === 200);
    expect(log.provider).toBe('cohere');
    expect(log.prompt_tokens).toBe(7);
    expect(log.completion_tokens).toBe(5);
    expect(Math.abs(log.cost_usd - (expected?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
    expect(log.cost_usd).toBeGreaterThan(0);
  });
});

describe('a Cohere reasoning model through the gateway', () => {
  // Command A Reasoning thinks by default, in `thinking` content parts (docs.cohere.com/docs/reasoning).
  const REASONING = 'cohere/command-a-reasoning-08-2025';

  it('gives an OpenAI client its thinking as reasoning_content, apart from the answer', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'client-side-key', maxRetries: 0 });
    const response = await client.chat.completions.create({ model: REASONING, messages: [{ role: 'user', content: 'why is the sky blue' }] });
    const message = response.choices[0]?.message as unknown as { content: string; reasoning_content?: string };
    expect(message.content).toBe('echo: why is the sky blue');
    expect(message.reasoning_content).toBe('thinking about: why is the sky blue');

    const stream = await client.chat.completions.create({ model: REASONING, stream: true, messages: [{ role: 'user', content: 'why is the sky blue' }] });
    let text = '';
    let reasoning = '';
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta as { content?: string | null; reasoning_content?: string } | undefined;
      text += delta?.content ?? '';
      reasoning += delta?.reasoning_content ?? '';
    }
    expect(text).toBe('echo: why is the sky blue');
    expect(reasoning).toBe('thinking about: why is the sky blue');
  });

  it('gives an Anthropic client its thinking as a thinking block, streamed or not', async () => {
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: 'client-side-key', maxRetries: 0 });
    const request = { model: REASONING, max_tokens: 2000, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: [{ role: 'user' as const, content: 'why is the sky blue' }] };
    const message = await client.messages.create(request);
    expect(message.content[0]).toMatchObject({ type: 'thinking', thinking: 'thinking about: why is the sky blue' });
    expect(message.content.at(-1)).toMatchObject({ type: 'text', text: 'echo: why is the sky blue' });
    const streamed = await client.messages.stream(request).finalMessage();
    expect(streamed.content[0]).toMatchObject({ type: 'thinking', thinking: 'thinking about: why is the sky blue' });
    expect(streamed.content.at(-1)).toMatchObject({ type: 'text', text: 'echo: why is the sky blue' });
  });
});

describe('cohere embeddings through the gateway', () => {
  const EMBED = 'cohere/embed-v4.0';

  it('answers the official client with decoded vectors in input order and sends Cohere\'s native embed request', async () => {
    const texts = ['the first document', 'second', 'a third, longer document here'];
    const response = await tg.client.embeddings.create({ model: EMBED, input: texts });
    expect(response.model).toBe(EMBED);
    expect(response.data.map((d) => d.index)).toEqual([0, 1, 2]);
    response.data.forEach((item, i) => {
      // The client asked for base64 (the SDK's default) and decoded it back to floats.
      expect(item.embedding).toHaveLength(1536);
      const expected = cohereEmbedVector(texts[i] as string, 1536);
      for (const j of [0, 1, 767, 1535]) expect(item.embedding[j]).toBeCloseTo(expected[j] as number, 6);
    });
    expect(response.data[0]?.embedding).not.toEqual(response.data[1]?.embedding);
    const tokens = cohereEmbedTokens(texts);
    expect(response.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });

    expect(upstream.calls).toHaveLength(1);
    const call = upstream.calls[0];
    expect(call?.path).toBe('/v2/embed');
    expect(call?.headers.authorization).toBe('Bearer co-upstream-key');
    expect(call?.body).toEqual({ model: 'embed-v4.0', texts, input_type: 'search_document', embedding_types: ['float'] });

    const log = await lastLog((entry) => entry.model === EMBED && entry.prompt_tokens === tokens);
    expect(log).toMatchObject({ provider: 'cohere', status: 200, prompt_tokens: tokens, completion_tokens: 0 });
    const expected = calcPrice({ input_tokens: tokens }, 'embed-v4.0', { providerId: 'cohere' });
    expect(Math.abs(log.cost_usd - (expected?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
    expect(log.cost_usd).toBeGreaterThan(0);
  });

  it('passes dimensions as output_dimension and a client input_type through, with float encoding', async () => {
    const params = { model: EMBED, input: 'what is the capital of France?', encoding_format: 'float', dimensions: 256, input_type: 'search_query' };
    const response = await tg.client.embeddings.create(params as OpenAI.EmbeddingCreateParams);
    expect(response.data).toHaveLength(1);
    expect(response.data[0]?.embedding).toEqual(cohereEmbedVector('what is the capital of France?', 256));
    expect(upstream.calls[0]?.body).toEqual({
      model: 'embed-v4.0',
      texts: ['what is the capital of France?'],
      input_type: 'search_query',
      embedding_types: ['float'],
      output_dimension: 256,
    });
  });

  it('refuses token arrays and more than 96 texts before calling Cohere', async () => {
    for (const input of [[1, 2, 3], [[1, 2], [3, 4]], Array.from({ length: 97 }, (_, i) => `text ${i}`)]) {
      const error = await tg.client.embeddings.create({ model: EMBED, input }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect((error as APIError).param).toBe('input');
    }
    expect(upstream.calls).toHaveLength(0);
    // 96 is Cohere's limit, and allowed.
    const full = await tg.client.embeddings.create({ model: EMBED, input: Array.from({ length: 96 }, (_, i) => `text ${i}`), encoding_format: 'float' });
    expect(full.data).toHaveLength(96);
    expect(full.data[95]?.embedding).toEqual(cohereEmbedVector('text 95', 1536));
    expect(upstream.calls[0]?.body.texts).toHaveLength(96);
  });

  it('passes Cohere\'s embed errors on as typed OpenAI errors with status and message', async () => {
    // Cohere's own validation: embed-v4.0 has no 300-wide vectors.
    const invalid = await tg.client.embeddings.create({ model: EMBED, input: 'x', dimensions: 300 }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(OpenAI.BadRequestError);
    expect((invalid as APIError).message).toMatch(/^400 invalid request: 300 is not a valid output_dimension/);

    upstream.enqueue({ kind: 'error', status: 429, headers: { 'retry-after': '5' } });
    const limited = await tg.client.embeddings.create({ model: EMBED, input: 'x' }).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as APIError).message).toMatch(/^429 You are using a Trial key/);
    expect((limited as APIError).headers?.get('retry-after')).toBe('5');

    upstream.enqueue({ kind: 'error', status: 402 });
    const unpaid = await tg.client.embeddings.create({ model: EMBED, input: 'x' }).catch((e: unknown) => e);
    expect((unpaid as APIError).status).toBe(402);
    expect((unpaid as APIError).type).toBe('insufficient_quota');

    upstream.enqueue({ kind: 'error', status: 503 });
    const down = await tg.client.embeddings.create({ model: EMBED, input: 'x' }).catch((e: unknown) => e);
    expect(down).toBeInstanceOf(OpenAI.InternalServerError);
    expect((down as APIError).status).toBe(503);
    expect(upstream.calls.map((c) => c.path)).toEqual(['/v2/embed', '/v2/embed', '/v2/embed', '/v2/embed']);
  });

  it('maps a broken embed answer to a 502', async () => {
    upstream.enqueue({ kind: 'break-after', chunks: 1 });
    const broken = await tg.client.embeddings.create({ model: EMBED, input: 'x' }).catch((e: unknown) => e);
    expect(broken).toBeInstanceOf(OpenAI.APIError);
    expect((broken as APIError).status).toBe(502);
  });
});
