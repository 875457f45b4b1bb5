import { calcPrice } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { type ProviderRuntime } from '../../src/core/config.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { ChatCompletionChunk, ChatCompletionRequest } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { costOf } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI } from '../../src/core/usage.js';
import { anthropicAdapter } from '../../src/providers/anthropic/index.js';
import { adapterFor } from '../../src/providers/registry.js';
import { makeTarget } from './targets.js';

/** A streamed request whose client asked for the usage chunk. */
const STREAMED = { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } };

const target = makeTarget({ vendorId: 'anthropic', model: 'claude-haiku-4-5', apiKey: 'sk-ant-test' });

function build(request: Partial<ChatCompletionRequest>) {
  const upstream = anthropicAdapter.buildChatRequest({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }], ...request }, target);
  return { ...upstream, json: JSON.parse(upstream.body as string) as Record<string, any> };
}

function buildError(request: Partial<ChatCompletionRequest>): GatewayError {
  try {
    build(request);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected the request to be refused');
}

describe('anthropic vendor and registry', () => {
  it('registers the anthropic format and vendor row', () => {
    expect(adapterFor('anthropic')).toBe(anthropicAdapter);
    expect(target.provider.vendor).toMatchObject({
      format: 'anthropic',
      defaultBaseUrl: 'https://api.anthropic.com',
      versionPath: '/v1',
      auth: { kind: 'header', header: 'x-api-key' },
      defaultHeaders: { 'anthropic-version': '2023-06-01' },
      keyEnv: ['ANTHROPIC_API_KEY'],
      baseUrlEnv: ['ANTHROPIC_BASE_URL'],
      catalogId: 'anthropic',
    });
  });
});

describe('buildChatRequest', () => {
  it('posts to {base}/messages with x-api-key and anthropic-version, never a bearer token', () => {
    const { url, method, headers } = build({});
    expect(method).toBe('POST');
    expect(url).toBe('https://api.anthropic.com/v1/messages');
    expect(headers).toEqual({ 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-api-key': 'sk-ant-test' });
    const slash = anthropicAdapter.buildChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, makeTarget({ vendorId: 'anthropic', baseUrl: 'http://127.0.0.1:9/v1/' }));
    expect(slash.url).toBe('http://127.0.0.1:9/v1/messages');
  });

  it('operator headers (anthropic-beta) ride along and may override the version', () => {
    const custom = makeTarget({ vendorId: 'anthropic', headers: { 'anthropic-beta': 'prompt-caching-2024-07-31', 'anthropic-version': '2023-01-01' } });
    const { headers } = anthropicAdapter.buildChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }] }, custom);
    expect(headers['anthropic-beta']).toBe('prompt-caching-2024-07-31');
    expect(headers['anthropic-version']).toBe('2023-01-01');
  });

  it('lifts system and developer messages into the top-level system and uses the target model', () => {
    const { json } = build({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: [{ type: 'text', text: 'answer in French' }] },
        { role: 'user', content: 'hello' },
      ],
    });
    expect(json.model).toBe('claude-haiku-4-5');
    expect(json.system).toBe('be brief\n\nanswer in French');
    expect(json.messages).toEqual([{ role: 'user', content: 'hello' }]);
  });

  it('keeps system blocks as blocks when they carry cache_control', () => {
    const { json } = build({ messages: [{ role: 'system', content: [{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }] }, { role: 'user', content: 'q' }] });
    expect(json.system).toEqual([{ type: 'text', text: 'long context', cache_control: { type: 'ephemeral' } }]);
  });

  it('merges consecutive messages of the same role (Anthropic needs alternation)', () => {
    const { json } = build({ messages: [{ role: 'user', content: 'one' }, { role: 'user', content: [{ type: 'text', text: 'two' }] }, { role: 'assistant', content: 'ok' }] });
    expect(json.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'one' }, { type: 'text', text: 'two' }] },
      { role: 'assistant', content: 'ok' },
    ]);
  });

  it('requires max_tokens: max_completion_tokens first, then max_tokens, else 4096', () => {
    expect(build({}).json.max_tokens).toBe(4096);
    expect(build({ max_tokens: 100 }).json.max_tokens).toBe(100);
    expect(build({ max_tokens: 100, max_completion_tokens: 50 }).json.max_tokens).toBe(50);
    expect(build({ max_tokens: null, max_completion_tokens: null }).json.max_tokens).toBe(4096);
  });

  it('maps sampling, stop, user and stream; drops OpenAI-only fields', () => {
    const { json } = build({
      temperature: 0.2, top_p: 0.9, stop: 'END', user: 'u-1', stream: true, stream_options: { include_usage: true },
      seed: 7, presence_penalty: 0.5, frequency_penalty: 0.5, logit_bias: { 1: 2 }, logprobs: false, metadata: { team: 'a' },
      store: true, n: 1, response_format: { type: 'json_object' },
    });
    expect(json).toEqual({
      model: 'claude-haiku-4-5', max_tokens: 4096, messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.2, top_p: 0.9, stop_sequences: ['END'], metadata: { user_id: 'u-1' }, stream: true,
    });
    expect(build({ stop: ['a', 'b'] }).json.stop_sequences).toEqual(['a', 'b']);
    expect(build({ stop: null }).json).not.toHaveProperty('stop_sequences');
  });

  it('maps a json_schema response_format to structured output', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'], additionalProperties: false };
    const { json } = build({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema, strict: true } } });
    expect(json.output_config).toEqual({ format: { type: 'json_schema', schema } });
  });

  it('refuses what Anthropic cannot serve with a clear 400', () => {
    expect(buildError({ n: 2 })).toMatchObject({ status: 400, param: 'n' });
    expect(buildError({ logprobs: true, top_logprobs: 2 })).toMatchObject({ status: 400, param: 'logprobs' });
    expect(buildError({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }).message).toMatch(/anthropic: .*input_audio/);
    expect(buildError({ messages: [{ role: 'function', name: 'f', content: 'x' }] }).message).toMatch(/role 'function'/);
    expect(buildError({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'ftp://x/y.png' } }] }] }).status).toBe(400);
  });

  it('sends data: URL images as base64 sources and web URLs as url sources', () => {
    const { json } = build({
      messages: [{
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'high' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
          { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0=' } },
        ],
      }],
    });
    expect(json.messages[0].content).toEqual([
      { type: 'text', text: 'what is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' } },
    ]);
  });

  it('maps tools and every tool_choice, with parallel_tool_calls false as disable_parallel_tool_use', () => {
    const tools = [
      { type: 'function', function: { name: 'weather', description: 'Get weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } },
      { type: 'function', function: { name: 'now' } },
    ];
    const { json } = build({ tools });
    expect(json.tools).toEqual([
      { name: 'weather', description: 'Get weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
      { name: 'now', input_schema: { type: 'object', properties: {} } },
    ]);
    expect(json).not.toHaveProperty('tool_choice');
    expect(build({ tools, tool_choice: 'none' }).json.tool_choice).toEqual({ type: 'none' });
    expect(build({ tools, tool_choice: 'auto' }).json.tool_choice).toEqual({ type: 'auto' });
    expect(build({ tools, tool_choice: 'required' }).json.tool_choice).toEqual({ type: 'any' });
    expect(build({ tools, tool_choice: { type: 'function', function: { name: 'now' } } }).json.tool_choice).toEqual({ type: 'tool', name: 'now' });
    expect(build({ tools, parallel_tool_calls: false }).json.tool_choice).toEqual({ type: 'auto', disable_parallel_tool_use: true });
    expect(build({ tools, tool_choice: 'required', parallel_tool_calls: false }).json.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    expect(build({ tools, parallel_tool_calls: true }).json).not.toHaveProperty('tool_choice');
    // No tools: nothing to choose from.
    expect(build({ tool_choice: 'auto' }).json).not.toHaveProperty('tool_choice');
    expect(buildError({ tools: [{ type: 'web_search' }] }).param).toBe('tools');
  });

  it('turns assistant tool_calls into tool_use blocks and tool messages into one user turn of tool_results', () => {
    const { json } = build({
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: 'Let me check.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '18C' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '21C' }] },
        { role: 'user', content: 'thanks' },
      ],
      tools: [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }],
    });
    expect(json.messages).toEqual([
      { role: 'user', content: 'weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'weather', input: {} },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18C' },
          { type: 'tool_result', tool_use_id: 'call_2', content: [{ type: 'text', text: '21C' }] },
          { type: 'text', text: 'thanks' },
        ],
      },
    ]);
    const bad = buildError({ messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] });
    expect(bad.message).toMatch(/not valid JSON/);
  });

  it('maps reasoning_effort to a thinking budget and passes an Anthropic thinking field through', () => {
    const low = build({ reasoning_effort: 'low' }).json;
    expect(low.thinking).toEqual({ type: 'enabled', budget_tokens: 1024 });
    // Without a client limit the answer keeps its default room on top of the budget.
    expect(low.max_tokens).toBe(4096 + 1024);
    expect(build({ reasoning_effort: 'high', max_completion_tokens: 3000 }).json.thinking).toEqual({ type: 'enabled', budget_tokens: 2999 });
    expect(build({ reasoning_effort: 'none' }).json.thinking).toEqual({ type: 'disabled' });
    expect(buildError({ reasoning_effort: 'low', max_completion_tokens: 500 }).status).toBe(400);
    expect(buildError({ reasoning_effort: 'extreme' }).param).toBe('reasoning_effort');
    const given = build({ thinking: { type: 'enabled', budget_tokens: 9000 }, max_tokens: 20000 }).json;
    expect(given.thinking).toEqual({ type: 'enabled', budget_tokens: 9000 });
    expect(given.max_tokens).toBe(20000);
  });

  it('does not mutate the request', () => {
    const request: ChatCompletionRequest = {
      model: 'anthropic/x',
      messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }, { role: 'tool', tool_call_id: 't', content: 'r' }],
    };
    const copy = structuredClone(request);
    anthropicAdapter.buildChatRequest(request, target);
    expect(request).toEqual(copy);
  });
});

describe('parseChatResponse', () => {
  const base = { id: 'msg_01', type: 'message', role: 'assistant', model: 'claude-haiku-4-5-20251001', stop_sequence: null };

  it('joins text blocks, maps usage with cache reads and writes inside prompt_tokens', () => {
    const completion = anthropicAdapter.parseChatResponse(
      {
        ...base,
        content: [{ type: 'text', text: 'Hello' }, { type: 'text', text: ' world' }],
        stop_reason: 'end_turn',
        usage: { input_tokens: 10, cache_creation_input_tokens: 200, cache_read_input_tokens: 3000, output_tokens: 7 },
      },
      target,
    );
    expect(completion).toMatchObject({
      id: 'msg_01',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello world', refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: 3210, completion_tokens: 7, total_tokens: 3217, prompt_tokens_details: { cached_tokens: 3000, cache_write_tokens: 200 } },
    });
    expect(typeof completion.created).toBe('number');
    expect((completion.choices[0] as any).message).not.toHaveProperty('tool_calls');
  });

  it('maps tool_use to tool_calls and thinking to reasoning_content, never into content', () => {
    const completion = anthropicAdapter.parseChatResponse(
      {
        ...base,
        content: [
          { type: 'thinking', thinking: 'The user wants weather.', signature: 'sig' },
          { type: 'redacted_thinking', data: 'xx' },
          { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
        ],
        stop_reason: 'tool_use',
        usage: { input_tokens: 5, output_tokens: 9 },
      },
      target,
    );
    const choice = completion.choices[0] as any;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.reasoning_content).toBe('The user wants weather.');
    expect(choice.message.tool_calls).toEqual([{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }]);
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
    ['pause_turn', 'stop'],
  ])('maps stop_reason %s to finish_reason %s', (stop, finish) => {
    const completion = anthropicAdapter.parseChatResponse({ ...base, content: [{ type: 'text', text: 'x' }], stop_reason: stop, usage: { input_tokens: 1, output_tokens: 1 } }, target);
    expect((completion.choices[0] as any).finish_reason).toBe(finish);
  });

  it('rejects a body that is not an Anthropic message with a retryable 502', () => {
    expect(() => anthropicAdapter.parseChatResponse({ choices: [] }, target)).toThrow(GatewayError);
    try {
      anthropicAdapter.parseChatResponse(null, target);
    } catch (err) {
      expect(err).toMatchObject({ status: 502, retryable: true });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------

const TEXT_STREAM = `event: message_start
data: {"type":"message_start","message":{"id":"msg_1nZd","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5-20251001","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Héllo"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" wörld 👋"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

event: message_stop
data: {"type":"message_stop"}

`;

const TOOL_STREAM = `event: message_start
data: {"type":"message_start","message":{"id":"msg_014p","type":"message","role":"assistant","model":"claude-haiku-4-5","stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Need the weather."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Checking."}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01T1","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\\"location\\": \\"San Fra"}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_02","name":"get_time","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

`;

function decode(text: string, pieces: number[] | 'bytes' = [text.length], request?: ChatCompletionRequest) {
  const decoder = (anthropicAdapter.createStreamDecoder as (t: typeof target, r?: ChatCompletionRequest) => ReturnType<typeof anthropicAdapter.createStreamDecoder>)(target, request);
  const bytes = Buffer.from(text, 'utf8');
  const chunks: ChatCompletionChunk[] = [];
  if (pieces === 'bytes') for (let i = 0; i < bytes.length; i++) chunks.push(...decoder.push(bytes.subarray(i, i + 1)));
  else {
    let at = 0;
    for (const size of pieces) {
      chunks.push(...decoder.push(bytes.subarray(at, at + size)));
      at += size;
    }
    chunks.push(...decoder.push(bytes.subarray(at)));
  }
  const tail = decoder.end();
  return { chunks: [...chunks, ...tail.chunks], complete: tail.complete };
}

const deltas = (chunks: ChatCompletionChunk[]) => chunks.flatMap((c) => (c.choices as any[]).map((choice) => choice.delta));
const textOf = (chunks: ChatCompletionChunk[]) => deltas(chunks).map((d) => d.content ?? '').join('');

describe('stream decoder', () => {
  it('decodes a text stream into role, content deltas and a finish chunk; complete only after message_stop', () => {
    const { chunks, complete } = decode(TEXT_STREAM);
    expect(complete).toBe(true);
    expect(chunks[0]).toMatchObject({ id: 'msg_1nZd', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    expect(deltas(chunks).slice(1, 3)).toEqual([{ content: 'Héllo' }, { content: ' wörld 👋' }]);
    expect(textOf(chunks)).toBe('Héllo wörld 👋');
    const last = chunks.at(-1) as ChatCompletionChunk;
    expect((last.choices[0] as any).finish_reason).toBe('stop');
    expect(chunks.every((c) => c.id === 'msg_1nZd')).toBe(true);
  });

  it('gives the same chunks however the bytes are split, even inside a multi-byte character', () => {
    const whole = decode(TEXT_STREAM).chunks.map((c) => c.choices);
    expect(decode(TEXT_STREAM, 'bytes').chunks.map((c) => c.choices)).toEqual(whole);
    for (const size of [3, 17, 64, 333]) {
      const pieces = Array.from({ length: Math.ceil(TEXT_STREAM.length / size) }, () => size);
      expect(decode(TEXT_STREAM, pieces).chunks.map((c) => c.choices)).toEqual(whole);
    }
  });

  it('reports usage: input and cache counts from message_start, output from message_delta', () => {
    const expected = { prompt_tokens: 2125, completion_tokens: 15, total_tokens: 2140, prompt_tokens_details: { cached_tokens: 2000, cache_write_tokens: 100 } };
    // With include_usage: OpenAI's last chunk without choices.
    const asked = decode(TEXT_STREAM, undefined, { model: 'm', messages: [], stream: true, stream_options: { include_usage: true } }).chunks;
    expect(asked.at(-1)).toMatchObject({ choices: [], usage: expected });
    expect((asked.at(-2) as any).choices[0].finish_reason).toBe('stop');
    expect(asked.at(-2)).not.toHaveProperty('usage');
    // Without it (or without the request), the finish chunk carries usage and no choiceless chunk appears.
    for (const request of [undefined, { model: 'm', messages: [], stream: true }]) {
      const chunks = decode(TEXT_STREAM, undefined, request).chunks;
      expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
      expect(chunks.at(-1)).toMatchObject({ usage: expected, choices: [{ finish_reason: 'stop' }] });
    }
  });

  it('keeps what was counted before message_stop as usageSoFar, in no chunk', () => {
    const decoder = anthropicAdapter.createStreamDecoder(target, STREAMED);
    expect(decoder.usageSoFar?.()).toBeNull();
    const beforeDelta = TEXT_STREAM.slice(0, TEXT_STREAM.indexOf('event: message_delta'));
    const chunks = decoder.push(Buffer.from(beforeDelta));
    expect(chunks.every((chunk) => chunk.usage === undefined)).toBe(true);
    // message_start's counts: the prompt with its cache reads and writes, and output so far.
    expect(decoder.usageSoFar?.()).toEqual({ prompt_tokens: 2125, completion_tokens: 1, total_tokens: 2126, prompt_tokens_details: { cached_tokens: 2000, cache_write_tokens: 100 } });
    decoder.push(Buffer.from(TEXT_STREAM.slice(beforeDelta.length, TEXT_STREAM.indexOf('event: message_stop'))));
    // message_delta's output count is cumulative; the input counts stay message_start's.
    expect(decoder.usageSoFar?.()).toMatchObject({ prompt_tokens: 2125, completion_tokens: 15 });
  });

  it('streams tool input fragments as tool_call argument deltas as they arrive, thinking as reasoning_content, and the signed block whole at its end', () => {
    const { chunks, complete } = decode(TOOL_STREAM, 'bytes');
    expect(complete).toBe(true);
    const all = deltas(chunks);
    expect(all.filter((d) => d.reasoning_content).map((d) => d.reasoning_content)).toEqual(['Need the weather.']);
    expect(textOf(chunks)).toBe('Checking.');
    const calls = all.filter((d) => d.tool_calls).map((d) => d.tool_calls[0]);
    expect(calls).toEqual([
      { index: 0, id: 'toolu_01T1', type: 'function', function: { name: 'get_weather', arguments: '' } },
      { index: 0, function: { arguments: '{"location": "San Fra' } },
      { index: 0, function: { arguments: 'ncisco, CA"}' } },
      { index: 1, id: 'toolu_02', type: 'function', function: { name: 'get_time', arguments: '' } },
      { index: 1, function: { arguments: '{}' } },
    ]);
    expect((chunks.at(-1)?.choices[0] as any).finish_reason).toBe('tool_calls');
    // The signature rides only on the block's own thinking_blocks delta (LiteLLM's field), with the whole text.
    const signed = all.filter((d) => d.thinking_blocks);
    expect(signed).toHaveLength(1);
    expect(signed[0].thinking_blocks).toEqual([{ type: 'thinking', thinking: 'Need the weather.', signature: expect.stringContaining('EqQBCgIYAhIM') }]);
    expect(JSON.stringify(all.filter((d) => !d.thinking_blocks))).not.toContain('EqQBCgIYAhIM');
  });

  it('gives a tool called without input the arguments {}', () => {
    const noInput = TOOL_STREAM.replace('"partial_json":"{}"', '"partial_json":""');
    const calls = deltas(decode(noInput).chunks).filter((d) => d.tool_calls && d.tool_calls[0].index === 1).map((d) => d.tool_calls[0].function.arguments);
    expect(calls).toEqual(['', '{}']);
    const withInput = deltas(decode(TOOL_STREAM).chunks).filter((d) => d.tool_calls && d.tool_calls[0].index === 1).map((d) => d.tool_calls[0].function.arguments);
    expect(withInput).toEqual(['', '{}']);
  });

  it('is incomplete when the stream ends before message_stop', () => {
    const cut = TEXT_STREAM.slice(0, TEXT_STREAM.indexOf('event: message_stop'));
    const { complete, chunks } = decode(cut);
    expect(complete).toBe(false);
    expect(textOf(chunks)).toBe('Héllo wörld 👋');
  });

  it('throws an error event as a retryable 502 GatewayError with the provider message', () => {
    const broken = `${TEXT_STREAM.slice(0, TEXT_STREAM.indexOf('event: content_block_stop'))}event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n`;
    const decoder = anthropicAdapter.createStreamDecoder(target, STREAMED);
    let caught: unknown;
    try {
      decoder.push(Buffer.from(broken));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(GatewayError);
    expect(caught).toMatchObject({ status: 502, retryable: true, code: 'overloaded_error', message: 'Overloaded' });
  });

  it('rejects an event that is not JSON', () => {
    const decoder = anthropicAdapter.createStreamDecoder(target, STREAMED);
    expect(() => decoder.push(Buffer.from('event: message_start\ndata: {nope\n\n'))).toThrow(/not JSON/);
  });
});

// ---------------------------------------------------------------------------------------------------------

function anthropicError(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_011' });
}

describe('parseError', () => {
  it.each([
    [400, 'invalid_request_error', 'invalid_request_error', false],
    [401, 'authentication_error', 'authentication_error', false],
    [403, 'permission_error', 'permission_error', false],
    [404, 'not_found_error', 'not_found_error', false],
    [413, 'request_too_large', 'invalid_request_error', false],
    [429, 'rate_limit_error', 'rate_limit_error', true],
    [500, 'api_error', 'upstream_error', true],
    [529, 'overloaded_error', 'upstream_error', true],
  ])('maps HTTP %i %s to %s (retryable %s), keeping status and message', (status, type, mapped, retryable) => {
    const error = anthropicAdapter.parseError(status, { 'retry-after': '7', 'anthropic-ratelimit-requests-remaining': '0' }, anthropicError(type, `msg for ${type}`), target);
    expect(error).toMatchObject({ status, type: mapped, code: type, message: `msg for ${type}`, retryable, upstreamStatus: status, headers: { 'retry-after': '7' } });
  });

  it('reads a body that is not Anthropic JSON (a proxy page) without losing the status', () => {
    const error = anthropicAdapter.parseError(413, {}, '<html>413 Request Entity Too Large</html>', target);
    expect(error).toMatchObject({ status: 413, retryable: false });
    expect(error.message).toMatch(/^anthropic: /);
  });
});

// ---------------------------------------------------------------------------------------------------------

describe('cost contract', () => {
  const provider: ProviderRuntime = (() => {
    const runtime = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { anthropic: { api_key: 'k' } } }) }, {}, 1).providers.get('anthropic');
    if (!runtime) throw new Error('no anthropic provider');
    return runtime;
  })();

  it.each(['claude-haiku-4-5', 'claude-sonnet-4-5', 'claude-opus-4-1'])('prices %s usage with cache reads and writes exactly like genai-prices', (model) => {
    for (const native of [
      { input_tokens: 1200, cache_read_input_tokens: 50_000, cache_creation_input_tokens: 8_000, output_tokens: 900 },
      { input_tokens: 250_000, cache_read_input_tokens: 10_000, cache_creation_input_tokens: 0, output_tokens: 10 },
      { input_tokens: 3, output_tokens: 1 },
    ]) {
      const completion = anthropicAdapter.parseChatResponse({ id: 'm', type: 'message', role: 'assistant', content: [{ type: 'text', text: 'x' }], stop_reason: 'end_turn', usage: native }, target);
      const usage = completion.usage;
      if (!usage) throw new Error('no usage');
      const cost = costOf(provider, model, tokenUsageFromOpenAI(usage));
      const read = native.cache_read_input_tokens ?? 0;
      const write = native.cache_creation_input_tokens ?? 0;
      const reference = calcPrice(
        { input_tokens: native.input_tokens + read + write, cache_read_tokens: read, cache_write_tokens: write, output_tokens: native.output_tokens },
        model,
        { providerId: 'anthropic' },
      );
      expect(cost.source).toBe('catalog');
      expect(reference?.total_price).toBeGreaterThan(0);
      expect(Math.abs(cost.usd - (reference?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
    }
  });
});

describe('native pass-through', () => {
  const native = { format: 'anthropic', body: { model: 'claude-x', max_tokens: 9, top_k: 3, messages: [{ role: 'user', content: 'hi' }], service_tier: 'auto' } };
  const frames = [
    'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","model":"claude-x","usage":{"input_tokens":12,"cache_read_input_tokens":4,"output_tokens":1}}}\n\n',
    'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n',
    'event: ping\ndata: {"type": "ping"}\n\n',
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}\n\n',
    'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}\n\n',
    'event: message_stop\ndata: {"type":"message_stop"}\n\n',
  ];

  it('sends the client body with only the model changed', () => {
    const built = anthropicAdapter.buildChatRequest({ model: 'anthropic/claude-y', messages: [] }, target, native);
    expect(JSON.parse(built.body ?? '')).toEqual({ ...native.body, model: target.model });
    expect(native.body.model).toBe('claude-x');
  });

  it('keeps every stream event as it came and still decodes the canonical chunks and usage', () => {
    const decoder = anthropicAdapter.createStreamDecoder(target, { model: 'm', messages: [], stream: true, stream_options: { include_usage: true } }, native);
    const chunks = frames.flatMap((frame) => decoder.push(Buffer.from(frame)));
    const kept = decoder.takeNative?.() ?? [];
    expect(kept.map((item) => `event: ${item.event}\ndata: ${item.data}\n\n`)).toEqual(frames);
    expect(decoder.takeNative?.()).toEqual([]);
    expect(decoder.end().complete).toBe(true);
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 16, completion_tokens: 5 });
  });

  it('keeps nothing when translating', () => {
    const decoder = anthropicAdapter.createStreamDecoder(target, { model: 'm', messages: [], stream: true });
    expect(decoder.takeNative).toBeUndefined();
  });
});
