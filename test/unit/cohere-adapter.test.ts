import { calcPrice, extractUsage, findProvider } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { ChatCompletionChunk, ChatCompletionRequest, CompletionUsage, EmbeddingsRequest } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { costOf } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI } from '../../src/core/usage.js';
import { cohereAdapter } from '../../src/providers/cohere/index.js';
import { cohereEmbedVector, cohereStreamFixture } from '../upstream/cohere-upstream.js';
import { makeTarget } from './targets.js';

const target = makeTarget({ vendorId: 'cohere', model: 'command-a-03-2025', apiKey: 'co-key' });

type Request = Partial<ChatCompletionRequest> & Pick<ChatCompletionRequest, 'messages'>;

function build(request: Request): Record<string, any> {
  const upstream = cohereAdapter.buildChatRequest({ model: 'cohere/command-a-03-2025', ...request }, target);
  return JSON.parse(upstream.body as string) as Record<string, any>;
}

function thrown(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error('expected a GatewayError');
}

const weatherTool = { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } };

describe('cohere buildChatRequest', () => {
  it('posts to {baseUrl}/chat with a bearer key and the model name', () => {
    const upstream = cohereAdapter.buildChatRequest({ model: 'cohere/command-a-03-2025', messages: [{ role: 'user', content: 'hi' }] }, target);
    expect(upstream.method).toBe('POST');
    expect(upstream.url).toBe('https://api.cohere.com/v2/chat');
    expect(upstream.headers.authorization).toBe('Bearer co-key');
    expect(upstream.headers['content-type']).toBe('application/json');
    expect(JSON.parse(upstream.body as string)).toEqual({ model: 'command-a-03-2025', messages: [{ role: 'user', content: 'hi' }] });
    const custom = makeTarget({ vendorId: 'cohere', baseUrl: 'http://127.0.0.1:9/v2/' });
    expect(cohereAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, custom).url).toBe('http://127.0.0.1:9/v2/chat');
  });

  it('maps system and developer prompts, text and image parts', () => {
    const body = build({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: [{ type: 'text', text: 'and kind' }] },
        {
          role: 'user',
          name: 'bob',
          content: [
            { type: 'text', text: 'what is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(body.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'system', content: 'and kind' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'low' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
  });

  it('maps tools, assistant tool calls (text becomes tool_plan) and tool results', () => {
    const body = build({
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: 'Let me look.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'sunny' }] },
        { role: 'assistant', content: null, tool_calls: [{ id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
        { role: 'tool', tool_call_id: 'c2', content: 'rain' },
        { role: 'assistant', content: [{ type: 'text', text: 'Sunny, then rain.' }] },
      ],
      tools: [{ ...weatherTool, function: { ...weatherTool.function, strict: true } }],
      // Cohere's own behaviour, which it has no field for (false is refused, see provider-audit-cohere-parallel-tool-calls).
      parallel_tool_calls: true,
    });
    expect(body.messages.slice(1)).toEqual([
      { role: 'assistant', tool_plan: 'Let me look.', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
      { role: 'assistant', tool_calls: [{ id: 'c2', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c2', content: 'rain' },
      { role: 'assistant', content: 'Sunny, then rain.' },
    ]);
    expect(body.tools).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: weatherTool.function.parameters } }]);
    expect(body.strict_tools).toBe(true);
    expect(body).not.toHaveProperty('parallel_tool_calls');
  });

  it('maps tool_choice: auto is omitted, required/none upper-case, a named function narrows the tools', () => {
    const other = { type: 'function', function: { name: 'other', parameters: {} } };
    const messages = [{ role: 'user', content: 'x' }];
    expect(build({ messages, tools: [weatherTool], tool_choice: 'auto' })).not.toHaveProperty('tool_choice');
    expect(build({ messages, tools: [weatherTool], tool_choice: 'required' }).tool_choice).toBe('REQUIRED');
    expect(build({ messages, tools: [weatherTool], tool_choice: 'none' }).tool_choice).toBe('NONE');
    const named = build({ messages, tools: [weatherTool, other], tool_choice: { type: 'function', function: { name: 'other' } } });
    expect(named.tool_choice).toBe('REQUIRED');
    expect(named.tools.map((t: any) => t.function.name)).toEqual(['other']);
    expect(thrown(() => build({ messages, tools: [weatherTool], tool_choice: { type: 'function', function: { name: 'nope' } } })).status).toBe(400);
  });

  it('renames sampling and limit fields and drops what Cohere has no use for', () => {
    const body = build({
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 50,
      max_completion_tokens: 20,
      temperature: 0.3,
      top_p: 0.9,
      stop: 'END',
      seed: 7,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      stream: true,
      stream_options: { include_usage: true },
      user: 'u1',
      metadata: { a: 'b' },
      n: 1,
    });
    expect(body).toEqual({
      model: 'command-a-03-2025',
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 20,
      temperature: 0.3,
      p: 0.9,
      stop_sequences: ['END'],
      seed: 7,
      frequency_penalty: 0.1,
      presence_penalty: 0.2,
      stream: true,
    });
    expect(build({ messages: [{ role: 'user', content: 'x' }], max_tokens: 9, stop: ['a', 'b'] })).toMatchObject({ max_tokens: 9, stop_sequences: ['a', 'b'] });
  });

  it('maps response_format to json_object with the schema itself', () => {
    const messages = [{ role: 'user', content: 'x' }];
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(build({ messages, response_format: { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true } } }).response_format).toEqual({ type: 'json_object', json_schema: schema });
    expect(build({ messages, response_format: { type: 'json_object' } }).response_format).toEqual({ type: 'json_object' });
    expect(build({ messages, response_format: { type: 'text' } })).not.toHaveProperty('response_format');
  });

  it('refuses what Cohere cannot serve with a 400', () => {
    const cases: Request[] = [
      { messages: [{ role: 'user', content: 'x' }], n: 2 },
      { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: '', format: 'wav' } }] }] },
      { messages: [{ role: 'function', name: 'f', content: 'x' }] },
      { messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'web_search' }] },
    ];
    for (const request of cases) {
      const error = thrown(() => build(request));
      expect(error.status).toBe(400);
      expect(error.message).toMatch(/^cohere: /);
    }
  });
});

describe('cohere parseChatResponse', () => {
  it('maps a text answer, its finish reason and its billed usage', () => {
    const completion = cohereAdapter.parseChatResponse(
      {
        id: 'abc',
        finish_reason: 'COMPLETE',
        message: { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm' }, { type: 'text', text: 'Hello' }, { type: 'text', text: ' there' }] },
        usage: { billed_units: { input_tokens: 5, output_tokens: 2 }, tokens: { input_tokens: 71, output_tokens: 2 } },
      },
      target,
    );
    expect(completion).toMatchObject({
      id: 'abc',
      object: 'chat.completion',
      model: 'command-a-03-2025',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there', refusal: null }, finish_reason: 'stop', logprobs: null }],
      // Cohere bills billed_units; `tokens` also counts what Cohere adds itself, which it does not charge for.
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
    expect(typeof completion.created).toBe('number');
  });

  it('maps tool calls, with the tool plan as content', () => {
    const completion = cohereAdapter.parseChatResponse(
      {
        id: 'abc',
        finish_reason: 'TOOL_CALL',
        message: { role: 'assistant', tool_plan: 'I will check.', tool_calls: [{ id: 'get_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
        usage: { billed_units: { input_tokens: 10, output_tokens: 5 } },
      },
      target,
    );
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: 'I will check.', tool_calls: [{ id: 'get_weather_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }], refusal: null },
      finish_reason: 'tool_calls',
      logprobs: null,
    });
    expect(completion.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
  });

  it.each([
    ['COMPLETE', 'stop'],
    ['STOP_SEQUENCE', 'stop'],
    ['MAX_TOKENS', 'length'],
    ['TOOL_CALL', 'tool_calls'],
  ])('maps finish reason %s to %s', (native, openai) => {
    const completion = cohereAdapter.parseChatResponse({ id: 'a', finish_reason: native, message: { role: 'assistant', content: [] } }, target);
    expect((completion.choices[0] as any).finish_reason).toBe(openai);
  });

  it('turns an ERROR or TIMEOUT finish and a body without a message into retryable 502s', () => {
    for (const body of [{ id: 'a', finish_reason: 'ERROR', message: { role: 'assistant' } }, { id: 'a', finish_reason: 'TIMEOUT', message: {} }, { id: 'a' }]) {
      const error = thrown(() => cohereAdapter.parseChatResponse(body, target));
      expect(error.status).toBe(502);
      expect(error.retryable).toBe(true);
    }
  });

  it('reports cache hits as cached prompt tokens, from the processed tokens when no billed units came', () => {
    const completion = cohereAdapter.parseChatResponse(
      { id: 'a', finish_reason: 'COMPLETE', message: { content: [{ type: 'text', text: 'x' }] }, usage: { tokens: { input_tokens: 1000, output_tokens: 10 }, cached_tokens: 600 } },
      target,
    );
    expect(completion.usage).toEqual({ prompt_tokens: 1000, completion_tokens: 10, total_tokens: 1010, prompt_tokens_details: { cached_tokens: 600 } });
  });
});

const streamRequest = (includeUsage: boolean): ChatCompletionRequest => ({
  model: 'cohere/command-a-03-2025',
  messages: [{ role: 'user', content: 'x' }],
  stream: true,
  ...(includeUsage ? { stream_options: { include_usage: true } } : {}),
});

function decode(frames: string[], pieceSize?: number, includeUsage = true): { chunks: ChatCompletionChunk[]; complete: boolean; usage?: CompletionUsage | null } {
  const decoder = cohereAdapter.createStreamDecoder(target, streamRequest(includeUsage));
  const bytes = Buffer.from(frames.join(''), 'utf8');
  const chunks: ChatCompletionChunk[] = [];
  const size = pieceSize ?? bytes.length;
  for (let at = 0; at < bytes.length; at += size) chunks.push(...decoder.push(bytes.subarray(at, at + size)));
  const tail = decoder.end();
  return { chunks: [...chunks, ...tail.chunks], complete: tail.complete, usage: tail.usage };
}

const deltas = (chunks: ChatCompletionChunk[]) => chunks.flatMap((c) => (c.choices as any[]).map((choice) => choice.delta));

describe('cohere stream decoder', () => {
  const textFrames = cohereStreamFixture({ model: 'm', messages: [{ role: 'user', content: 'hello big world' }], stream: true });

  it('turns a text stream into role, content deltas, finish and a usage chunk', () => {
    const { chunks, complete } = decode(textFrames);
    expect(complete).toBe(true);
    expect(deltas(chunks)[0]).toEqual({ role: 'assistant', content: '' });
    expect(deltas(chunks).map((d) => d.content ?? '').join('')).toBe('echo: hello big world');
    // Every content token is its own chunk, relayed as it came.
    expect(deltas(chunks).filter((d) => d.content).length).toBe(4);
    const finish = chunks.find((c) => (c.choices[0] as any)?.finish_reason);
    expect((finish?.choices[0] as any).finish_reason).toBe('stop');
    const last = chunks[chunks.length - 1] as ChatCompletionChunk;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
    const id = chunks[0]?.id;
    expect(chunks.every((c) => c.id === id && c.object === 'chat.completion.chunk')).toBe(true);
  });

  it('sends no usage chunk unless asked, but still reports usage to the gateway', () => {
    const { chunks, complete, usage } = decode(textFrames, undefined, false);
    expect(complete).toBe(true);
    expect(chunks.every((c) => c.choices.length === 1 && !c.usage)).toBe(true);
    expect(usage).toEqual({ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 });
  });

  it('gives the same chunks whatever the network splits (down to single bytes, inside UTF-8)', () => {
    const frames = cohereStreamFixture({ model: 'm', messages: [{ role: 'user', content: 'héllo wörld 🌍' }], stream: true });
    const whole = decode(frames);
    for (const size of [1, 2, 7, 33]) {
      const split = decode(frames, size);
      expect(split.complete).toBe(true);
      expect(split.chunks.map((c) => ({ ...c, created: 0 }))).toEqual(whole.chunks.map((c) => ({ ...c, created: 0 })));
    }
    expect(deltas(whole.chunks).map((d) => d.content ?? '').join('')).toBe('echo: héllo wörld 🌍');
  });

  it('streams tool calls: plan as content, id and name first, then argument pieces as they arrive', () => {
    const frames = cohereStreamFixture({ model: 'm', messages: [{ role: 'user', content: 'use the tool please' }], tools: [weatherTool], stream: true });
    const { chunks, complete } = decode(frames);
    expect(complete).toBe(true);
    const calls = deltas(chunks).flatMap((d) => d.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(calls[0].id).toMatch(/^get_weather_/);
    expect(calls.length).toBeGreaterThan(3);
    expect(calls.slice(1).every((c: any) => c.index === 0 && c.id === undefined)).toBe(true);
    expect(calls.map((c: any) => c.function.arguments).join('')).toBe(JSON.stringify({ query: 'use the tool please' }));
    expect(deltas(chunks).map((d) => d.content ?? '').join('')).toBe('I will use get_weather.');
    expect(chunks.some((c) => (c.choices[0] as any)?.finish_reason === 'tool_calls')).toBe(true);
  });

  it('numbers parallel tool calls from 0 whatever index Cohere gives them', () => {
    const frame = (event: object) => `event: ${(event as any).type}\ndata: ${JSON.stringify(event)}\n\n`;
    const frames = [
      frame({ id: 'm1', type: 'message-start', delta: { message: { role: 'assistant' } } }),
      frame({ type: 'tool-call-start', index: 1, delta: { message: { tool_calls: { id: 'a', type: 'function', function: { name: 'f', arguments: '{"x"' } } } } }),
      frame({ type: 'tool-call-delta', index: 1, delta: { message: { tool_calls: { function: { arguments: ':1}' } } } } }),
      frame({ type: 'tool-call-end', index: 1 }),
      frame({ type: 'tool-call-start', index: 2, delta: { message: { tool_calls: { id: 'b', type: 'function', function: { name: 'g', arguments: '' } } } } }),
      frame({ type: 'tool-call-delta', index: 2, delta: { message: { tool_calls: { function: { arguments: '{}' } } } } }),
      frame({ type: 'citation-start', index: 0, delta: { message: { citations: {} } } }),
      frame({ type: 'message-end', delta: { finish_reason: 'TOOL_CALL' } }),
    ];
    const calls = deltas(decode(frames).chunks).flatMap((d) => d.tool_calls ?? []);
    expect(calls).toEqual([
      { index: 0, id: 'a', type: 'function', function: { name: 'f', arguments: '{"x"' } },
      { index: 0, function: { arguments: ':1}' } },
      { index: 1, id: 'b', type: 'function', function: { name: 'g', arguments: '' } },
      { index: 1, function: { arguments: '{}' } },
    ]);
  });

  it('is incomplete without message-end', () => {
    const cut = textFrames.slice(0, -2);
    const { chunks, complete } = decode(cut);
    expect(complete).toBe(false);
    expect(deltas(chunks).map((d) => d.content ?? '').join('')).toBe('echo: hello big world');
  });

  it('throws a retryable 502 on an error object or an ERROR finish inside the stream', () => {
    // Cohere's own message as written; the ERROR finish carries none, so tollgate says what happened.
    for (const [bad, message] of [
      ['data: {"message":"internal server error"}\n\n', /^internal server error$/],
      ['event: message-end\ndata: {"type":"message-end","delta":{"finish_reason":"ERROR"}}\n\n', /^cohere: the generation ended with finish_reason ERROR/],
      // Cohere's message-end carries the reason in `delta.error` (ChatMessageEndEvent in its API spec).
      ['event: message-end\ndata: {"type":"message-end","delta":{"finish_reason":"ERROR","error":"model overloaded, please retry"}}\n\n', /^cohere: the generation ended with finish_reason ERROR; the answer is incomplete: model overloaded, please retry$/],
    ] as const) {
      const decoder = cohereAdapter.createStreamDecoder(target, streamRequest(false));
      decoder.push(Buffer.from(textFrames[0] as string));
      const error = thrown(() => decoder.push(Buffer.from(bad)));
      expect(error.status).toBe(502);
      expect(error.retryable).toBe(true);
      expect(error.message).toMatch(message);
    }
    expect(thrown(() => cohereAdapter.createStreamDecoder(target, streamRequest(false)).push(Buffer.from('data: {not json\n\n'))).status).toBe(502);
  });
});

describe('cohere parseError', () => {
  it.each([
    [400, 'invalid_request_error', false],
    [401, 'authentication_error', false],
    [402, 'insufficient_quota', false],
    [404, 'not_found_error', false],
    [422, 'invalid_request_error', false],
    [429, 'rate_limit_error', true],
    [498, 'authentication_error', false],
    [500, 'upstream_error', true],
    [503, 'upstream_error', true],
    [504, 'upstream_error', true],
  ])('maps %i to %s keeping the message', (status, type, retryable) => {
    const error = cohereAdapter.parseError(status, { 'retry-after': '3', 'x-debug-trace-id': 't' }, JSON.stringify({ id: 'e1', message: `boom ${status}` }), target);
    expect(error).toBeInstanceOf(GatewayError);
    // Cohere's 498 (invalid token) is answered as the 401 OpenAI clients recognise; the upstream's status stays on record.
    expect(error).toMatchObject({ status: status === 498 ? 401 : status, type, retryable, upstreamStatus: status, message: `boom ${status}` });
    expect(error.headers).toEqual({ 'retry-after': '3' });
  });

  it('keeps a plain-text body', () => {
    expect(cohereAdapter.parseError(502, {}, 'Bad Gateway', target).message).toBe('Bad Gateway');
  });
});

describe('cohere cost contract', () => {
  it('prices the mapped usage exactly as genai-prices prices the native usage', () => {
    const runtime = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { cohere: { api_key: 'k' } } }) }, {}, 1).providers.get('cohere');
    if (!runtime) throw new Error('no cohere provider');
    const model = 'command-a-03-2025';
    for (const native of [
      { billed_units: { input_tokens: 900, output_tokens: 300 }, tokens: { input_tokens: 1200, output_tokens: 300 }, cached_tokens: 500 },
      { billed_units: { input_tokens: 12345, output_tokens: 678 } },
      { tokens: { input_tokens: 70, output_tokens: 2 } },
    ]) {
      const completion = cohereAdapter.parseChatResponse({ id: 'x', finish_reason: 'COMPLETE', message: { content: [] }, usage: native }, target);
      const usage = completion.usage as CompletionUsage;
      // What genai-prices reads from Cohere's answer: billed_units (its default extractor), else the tokens.
      const provider = findProvider({ providerId: 'cohere' });
      if (!provider) throw new Error('no cohere prices');
      const answer = { model, usage: native };
      const { usage: read } = 'billed_units' in native ? extractUsage(provider, answer) : extractUsage(provider, answer, 'tokens');
      const expected = calcPrice(read, model, { providerId: 'cohere' });
      expect(expected).not.toBeNull();
      const cost = costOf(runtime, model, tokenUsageFromOpenAI(usage));
      expect(cost.source).toBe('catalog');
      expect(Math.abs(cost.usd - (expected?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
      expect(cost.usd).toBeGreaterThan(0);
    }
  });
});

describe('cohere embeddings', () => {
  const embedTarget = makeTarget({ vendorId: 'cohere', model: 'embed-v4.0', apiKey: 'co-key' });
  const buildEmbed = (request: Partial<EmbeddingsRequest>): Record<string, any> => {
    const upstream = cohereAdapter.buildEmbeddingsRequest?.({ model: 'cohere/embed-v4.0', input: 'x', ...request }, embedTarget);
    if (!upstream) throw new Error('the cohere adapter has no embeddings');
    return JSON.parse(upstream.body as string) as Record<string, any>;
  };
  const answer = (vectors: number[][], meta: unknown = { api_version: { version: '2' }, billed_units: { input_tokens: 7 } }) => ({
    id: 'e1',
    embeddings: { float: vectors },
    texts: vectors.map((_, i) => `t${i}`),
    meta,
    response_type: 'embeddings_by_type',
  });

  it('posts to {baseUrl}/embed with a bearer key, the texts, a search_document input_type and float embeddings', () => {
    const upstream = cohereAdapter.buildEmbeddingsRequest?.({ model: 'cohere/embed-v4.0', input: ['first', 'second'], user: 'u-1', encoding_format: 'base64' }, embedTarget);
    expect(upstream?.method).toBe('POST');
    expect(upstream?.url).toBe('https://api.cohere.com/v2/embed');
    expect(upstream?.headers.authorization).toBe('Bearer co-key');
    expect(upstream?.headers['content-type']).toBe('application/json');
    expect(upstream?.headers.accept).toBe('application/json');
    // `user` and `encoding_format` have no Cohere field: floats come back and tollgate encodes them.
    expect(JSON.parse(upstream?.body as string)).toEqual({ model: 'embed-v4.0', texts: ['first', 'second'], input_type: 'search_document', embedding_types: ['float'] });
    const custom = makeTarget({ vendorId: 'cohere', baseUrl: 'http://127.0.0.1:9/v2/', model: 'embed-english-v3.0' });
    expect(cohereAdapter.buildEmbeddingsRequest?.({ model: 'x', input: 'a' }, custom).url).toBe('http://127.0.0.1:9/v2/embed');
  });

  it('sends a single string as one text, dimensions as output_dimension, and passes input_type and truncate through', () => {
    expect(buildEmbed({ input: 'only one', dimensions: 256, input_type: 'search_query', truncate: 'start' })).toEqual({
      model: 'embed-v4.0',
      texts: ['only one'],
      input_type: 'search_query',
      embedding_types: ['float'],
      output_dimension: 256,
      truncate: 'START',
    });
    expect(thrown(() => buildEmbed({ input_type: 7 }))).toMatchObject({ status: 400, param: 'input_type' });
    expect(thrown(() => buildEmbed({ truncate: 'middle' }))).toMatchObject({ status: 400, param: 'truncate' });
  });

  it('refuses token-array input with a 400 on input', () => {
    for (const input of [[1, 2, 3], [[1, 2], [3]]] as Array<number[] | number[][]>) {
      const error = thrown(() => buildEmbed({ input }));
      expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'input' });
      expect(error.message).toContain('token-array input');
    }
  });

  it('refuses more than 96 texts with a 400 on input, and takes exactly 96', () => {
    const many = Array.from({ length: 97 }, (_, i) => `text ${i}`);
    const error = thrown(() => buildEmbed({ input: many }));
    expect(error).toMatchObject({ status: 400, param: 'input' });
    expect(error.message).toContain('at most 96');
    expect(buildEmbed({ input: many.slice(0, 96) }).texts).toHaveLength(96);
  });

  it('maps the float embeddings to OpenAI data in input order with the billed tokens as usage', () => {
    const request: EmbeddingsRequest = { model: 'cohere/embed-v4.0', input: ['a', 'b'], encoding_format: 'float' };
    const parsed = cohereAdapter.parseEmbeddingsResponse?.(answer([[0.1, 0.2], [0.3, -0.4]]), embedTarget, request);
    expect(parsed).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.1, 0.2] },
        { object: 'embedding', index: 1, embedding: [0.3, -0.4] },
      ],
      model: 'cohere/embed-v4.0',
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    // Billed units win over processed tokens when Cohere reports both: they are what Cohere charges.
    const both = cohereAdapter.parseEmbeddingsResponse?.(answer([[1]], { billed_units: { input_tokens: 3 }, tokens: { input_tokens: 5 } }), embedTarget, { model: 'm', input: 'a' });
    expect(both?.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
    const none = cohereAdapter.parseEmbeddingsResponse?.(answer([[1]], { api_version: { version: '2' } }), embedTarget, { model: 'm', input: 'a' });
    expect(none?.usage).toEqual({ prompt_tokens: 0, total_tokens: 0 });
  });

  it('encodes vectors as base64 little-endian float32 when asked, and they decode back', () => {
    const vectors = [cohereEmbedVector('first', 16), cohereEmbedVector('second', 16)];
    const parsed = cohereAdapter.parseEmbeddingsResponse?.(answer(vectors), embedTarget, { model: 'm', input: ['first', 'second'], encoding_format: 'base64' });
    parsed?.data.forEach((item, i) => {
      expect(typeof item.embedding).toBe('string');
      const bytes = Buffer.from(item.embedding as string, 'base64');
      const decoded = Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
      expect(decoded).toHaveLength(16);
      decoded.forEach((value, j) => expect(value).toBeCloseTo(vectors[i]?.[j] as number, 6));
    });
    // No encoding_format: floats, as OpenAI does.
    const plain = cohereAdapter.parseEmbeddingsResponse?.(answer(vectors), embedTarget, { model: 'm', input: ['first', 'second'] });
    expect(plain?.data[1]?.embedding).toEqual(vectors[1]);
  });

  it('answers a retryable 502 when the embed answer is malformed or the count does not match', () => {
    const request: EmbeddingsRequest = { model: 'm', input: ['a', 'b'] };
    for (const bad of [null, { id: 'x' }, { embeddings: { int8: [[1]] } }, { embeddings: { float: [[1], ['x']] } }, answer([[1]])]) {
      const error = thrown(() => cohereAdapter.parseEmbeddingsResponse?.(bad, embedTarget, request));
      expect(error).toMatchObject({ status: 502, retryable: true, code: 'invalid_upstream_response' });
      expect(error.message).toMatch(/^cohere: /);
    }
  });

  it('prices the billed input tokens of embed-v4.0 from the catalogue', () => {
    const runtime = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { cohere: { api_key: 'k' } } }) }, {}, 1).providers.get('cohere');
    if (!runtime) throw new Error('no cohere provider');
    const parsed = cohereAdapter.parseEmbeddingsResponse?.(answer([[1]], { billed_units: { input_tokens: 12345 } }), embedTarget, { model: 'm', input: 'a' });
    const usage: CompletionUsage = { prompt_tokens: parsed?.usage.prompt_tokens ?? 0, completion_tokens: 0, total_tokens: parsed?.usage.total_tokens ?? 0 };
    const expected = calcPrice({ input_tokens: 12345 }, 'embed-v4.0', { providerId: 'cohere' });
    expect(expected).not.toBeNull();
    const cost = costOf(runtime, 'embed-v4.0', tokenUsageFromOpenAI(usage));
    expect(cost.source).toBe('catalog');
    expect(Math.abs(cost.usd - (expected?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
    expect(cost.usd).toBeGreaterThan(0);
  });
});
