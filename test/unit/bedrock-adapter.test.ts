import { createHash, createHmac } from 'node:crypto';
import { calcPrice, findProvider } from '@pydantic/genai-prices';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { ChatCompletionChunk, ChatCompletionRequest, CompletionUsage, EmbeddingsRequest } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { bedrockAdapter } from '../../src/providers/bedrock/adapter.js';
import { embeddingModel } from '../../src/providers/bedrock/embeddings.js';
import { countTextTokens } from '../../src/tokens/tokenizer.js';
import { costOf } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI } from '../../src/core/usage.js';
import type { Target, UpstreamRequest } from '../../src/core/provider.js';
import { adapterFor, vendorById } from '../../src/providers/registry.js';
import { makeTarget } from './targets.js';

const MODEL = 'anthropic.claude-3-5-sonnet-20241022-v2:0';
const codec = new EventStreamCodec(toUtf8, fromUtf8);
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

function target(options: Parameters<typeof makeTarget>[0] = {}): Target {
  return makeTarget({ vendorId: 'bedrock', model: MODEL, apiKey: 'AKIDEXAMPLE:wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', ...options });
}

function body(request: Partial<ChatCompletionRequest>, t: Target = target()): any {
  const built = bedrockAdapter.buildChatRequest({ model: `bedrock/${MODEL}`, messages: [], ...request } as ChatCompletionRequest, t);
  return JSON.parse(built.body as string);
}

function rejects(request: Partial<ChatCompletionRequest>): GatewayError {
  try {
    body(request);
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    return err as GatewayError;
  }
  throw new Error('expected a GatewayError');
}

function event(type: string, payload: unknown): Buffer {
  return Buffer.from(codec.encode({
    headers: { ':event-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' }, ':message-type': { type: 'string', value: 'event' } },
    body: fromUtf8(JSON.stringify(payload)),
  }));
}

function exception(type: string, message: string): Buffer {
  return Buffer.from(codec.encode({
    headers: { ':exception-type': { type: 'string', value: type }, ':content-type': { type: 'string', value: 'application/json' }, ':message-type': { type: 'string', value: 'exception' } },
    body: fromUtf8(JSON.stringify({ message })),
  }));
}

const USAGE = { inputTokens: 1200, outputTokens: 300, totalTokens: 7300, cacheReadInputTokens: 5000, cacheWriteInputTokens: 800 };

/** A ConverseStream with text, a tool call whose arguments come in three pieces, a stop and usage. */
function nativeStream(): Buffer[] {
  return [
    event('messageStart', { role: 'assistant', p: 'abc' }),
    event('contentBlockDelta', { contentBlockIndex: 0, delta: { reasoningContent: { text: 'thinking' } } }),
    event('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'Hel' }, p: 'a' }),
    event('contentBlockDelta', { contentBlockIndex: 1, delta: { text: 'lo ü' } }),
    event('contentBlockStop', { contentBlockIndex: 1 }),
    event('contentBlockStart', { contentBlockIndex: 2, start: { toolUse: { toolUseId: 'tooluse_1', name: 'get_weather' } } }),
    event('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: '{"ci' } } }),
    event('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: 'ty":"Pa' } } }),
    event('contentBlockDelta', { contentBlockIndex: 2, delta: { toolUse: { input: 'ris"}' } } }),
    event('contentBlockStop', { contentBlockIndex: 2 }),
    event('messageStop', { stopReason: 'tool_use' }),
    event('metadata', { usage: USAGE, metrics: { latencyMs: 10 } }),
  ];
}

const STREAM_REQUEST: ChatCompletionRequest = { model: 'x', messages: [], stream: true, stream_options: { include_usage: true } };
const PLAIN_STREAM: ChatCompletionRequest = { model: 'x', messages: [], stream: true };

function decodeAll(reads: Buffer[], request: ChatCompletionRequest = STREAM_REQUEST): { chunks: ChatCompletionChunk[]; complete: boolean; perRead: number[]; usage: CompletionUsage | null | undefined } {
  const decoder = bedrockAdapter.createStreamDecoder(target(), request);
  const chunks: ChatCompletionChunk[] = [];
  const perRead: number[] = [];
  for (const read of reads) {
    const out = decoder.push(read);
    perRead.push(out.length);
    chunks.push(...out);
  }
  const tail = decoder.end();
  chunks.push(...tail.chunks);
  return { chunks, complete: tail.complete, perRead, usage: tail.usage };
}

function deltas(chunks: ChatCompletionChunk[]): any[] {
  return chunks.flatMap((chunk) => (chunk.choices as any[]).map((choice) => choice.delta));
}

describe('bedrock vendor row and registry', () => {
  it('registers the bedrock format and a vendor priced from the aws catalogue', () => {
    expect(adapterFor('bedrock')).toBe(bedrockAdapter);
    const vendor = vendorById('bedrock');
    expect(vendor).toMatchObject({ format: 'bedrock', auth: { kind: 'none' }, keyEnv: ['AWS_BEARER_TOKEN_BEDROCK'], regionEnv: ['AWS_REGION', 'AWS_DEFAULT_REGION'], catalogId: 'aws' });
    expect(findProvider({ providerId: 'aws' })?.id).toBe('aws');
  });
});

describe('bedrockAdapter.buildChatRequest: URL and headers', () => {
  it('fills the region into the default base URL and percent-encodes the model id', () => {
    const built = bedrockAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, target());
    expect(built.url).toBe('https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse');
    expect(built.method).toBe('POST');
    expect(built.headers['content-type']).toBe('application/json');
    expect(built.headers.authorization).toBeUndefined();
    const eu = bedrockAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }], stream: true }, target({ options: { region: 'eu-west-3' } }));
    expect(eu.url).toBe('https://bedrock-runtime.eu-west-3.amazonaws.com/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/converse-stream');
  });

  it('uses a base URL without {region} as it is and sends operator headers', () => {
    const built = bedrockAdapter.buildChatRequest(
      { model: 'x', messages: [{ role: 'user', content: 'hi' }] },
      target({ baseUrl: 'http://127.0.0.1:9/', model: 'us.amazon.nova-pro-v1:0', headers: { 'x-team': 'a' }, options: { region: 'eu-west-1' } }),
    );
    expect(built.url).toBe('http://127.0.0.1:9/model/us.amazon.nova-pro-v1%3A0/converse');
    expect(built.headers['x-team']).toBe('a');
  });
});

describe('bedrockAdapter.buildChatRequest: the Converse body', () => {
  it('moves system and developer messages to system and merges consecutive user turns', () => {
    const out = body({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: [{ type: 'text', text: 'no emoji' }] },
        { role: 'user', content: 'hi' },
        { role: 'user', content: [{ type: 'text', text: 'there' }] },
      ],
      seed: 7,
      user: 'bob',
      metadata: { a: '1' },
    });
    expect(out).toEqual({
      system: [{ text: 'be brief' }, { text: 'no emoji' }],
      messages: [{ role: 'user', content: [{ text: 'hi' }, { text: 'there' }] }],
    });
  });

  it('maps a data: URL image part to image bytes with its format', () => {
    const out = body({ messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }, { type: 'image_url', image_url: { url: `data:image/jpg;base64,${PNG}`, detail: 'low' } }] }] });
    expect(out.messages[0].content).toEqual([
      { text: 'what is this?' },
      { image: { format: 'png', source: { bytes: PNG } } },
      { image: { format: 'jpeg', source: { bytes: PNG } } },
    ]);
  });

  it('rejects http image URLs, unknown image types and unsupported parts with a 400', () => {
    const http = rejects({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/cat.png' } }] }] });
    expect(http.status).toBe(400);
    expect(http.message).toMatch(/data: URLs/);
    expect(http.param).toBe('messages.0.content.0');
    expect(rejects({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/bmp;base64,${PNG}` } }] }] }).message).toMatch(/image\/bmp/);
    expect(rejects({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] }).status).toBe(400);
    expect(rejects({ messages: [{ role: 'function', content: 'x', name: 'f' }] }).status).toBe(400);
    expect(rejects({ messages: [{ role: 'user', content: 'hi' }], n: 2 }).param).toBe('n');
    expect(rejects({ messages: [{ role: 'system', content: 'only a system prompt' }] }).status).toBe(400);
  });

  it('maps max tokens, temperature, top_p and stop to inferenceConfig', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    expect(body({ messages, max_tokens: 50, max_completion_tokens: 100, temperature: 0.3, top_p: 0.9, stop: 'END' }).inferenceConfig).toEqual({ maxTokens: 100, temperature: 0.3, topP: 0.9, stopSequences: ['END'] });
    expect(body({ messages, max_tokens: 50, stop: ['a', 'b'] }).inferenceConfig).toEqual({ maxTokens: 50, stopSequences: ['a', 'b'] });
    expect(body({ messages }).inferenceConfig).toBeUndefined();
  });

  const tools = [
    { type: 'function', function: { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } },
    { type: 'function', function: { name: 'noop' } },
  ];

  it('maps tools and every tool_choice', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const specs = [
      { toolSpec: { name: 'get_weather', description: 'Weather for a city', inputSchema: { json: tools[0]!.function.parameters } } },
      { toolSpec: { name: 'noop', inputSchema: { json: { type: 'object', properties: {} } } } },
    ];
    expect(body({ messages, tools }).toolConfig).toEqual({ tools: specs });
    expect(body({ messages, tools, tool_choice: 'auto' }).toolConfig.toolChoice).toEqual({ auto: {} });
    expect(body({ messages, tools, tool_choice: 'required' }).toolConfig.toolChoice).toEqual({ any: {} });
    expect(body({ messages, tools, tool_choice: { type: 'function', function: { name: 'noop' } } }).toolConfig.toolChoice).toEqual({ tool: { name: 'noop' } });
    expect(body({ messages, tools, tool_choice: 'none' }).toolConfig).toBeUndefined();
  });

  it('maps assistant tool calls to toolUse and tool messages to merged toolResult blocks in a user turn', () => {
    const out = body({
      tools,
      tool_choice: 'none',
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
            { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
        { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: 'rainy' }] },
        { role: 'user', content: 'thanks' },
      ],
    });
    expect(out.messages).toEqual([
      { role: 'user', content: [{ text: 'weather in Paris and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { toolUse: { toolUseId: 'call_1', name: 'get_weather', input: { city: 'Paris' } } },
          { toolUse: { toolUseId: 'call_2', name: 'get_weather', input: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'call_1', content: [{ text: 'sunny' }] } },
          { toolResult: { toolUseId: 'call_2', content: [{ text: 'rainy' }] } },
          { text: 'thanks' },
        ],
      },
    ]);
    // tool_choice none cannot drop the toolConfig here (Converse needs one next to toolUse blocks), but offers
    // only the do-nothing tool, none of the client's.
    expect(out.toolConfig.tools.map((tool: any) => tool.toolSpec.name)).toEqual(['no_tools_available']);
    expect(out.toolConfig.toolChoice).toBeUndefined();
    expect(rejects({ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] }).status).toBe(400);
  });

  it('maps a json_schema response_format to outputConfig and drops json_object', () => {
    const messages = [{ role: 'user', content: 'hi' }];
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(body({ messages, response_format: { type: 'json_schema', json_schema: { name: 'thing', schema } } }).outputConfig).toEqual({
      textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(schema), name: 'thing' } } },
    });
    expect(body({ messages, response_format: { type: 'json_object' } }).outputConfig).toBeUndefined();
  });

  it('does not mutate the request', () => {
    const request: ChatCompletionRequest = { model: 'x', messages: [{ role: 'user', content: 'a' }, { role: 'user', content: 'b' }], tools, stop: 'x' };
    const copy = structuredClone(request);
    bedrockAdapter.buildChatRequest(request, target());
    expect(request).toEqual(copy);
  });
});

describe('bedrockAdapter.parseChatResponse', () => {
  it('maps text, reasoning, tool use, stop reason and usage', () => {
    const completion = bedrockAdapter.parseChatResponse(
      {
        output: {
          message: {
            role: 'assistant',
            content: [
              { reasoningContent: { reasoningText: { text: 'Let me think.', signature: 'sig' } } },
              { text: 'Checking.' },
              { toolUse: { toolUseId: 'tooluse_9', name: 'get_weather', input: { city: 'Paris' } } },
            ],
          },
        },
        stopReason: 'tool_use',
        usage: USAGE,
        metrics: { latencyMs: 5 },
      },
      target(),
    );
    expect(completion).toMatchObject({ object: 'chat.completion', model: MODEL });
    expect(completion.id).toMatch(/^chatcmpl-/);
    expect(completion.choices).toEqual([
      {
        index: 0,
        message: {
          role: 'assistant',
          content: 'Checking.',
          reasoning_content: 'Let me think.',
          tool_calls: [{ id: 'tooluse_9', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
          refusal: null,
        },
        finish_reason: 'tool_calls',
        logprobs: null,
      },
    ]);
    expect(completion.usage).toEqual({
      prompt_tokens: 7000,
      completion_tokens: 300,
      total_tokens: 7300,
      prompt_tokens_details: { cached_tokens: 5000, cache_write_tokens: 800 },
    });
  });

  it.each([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['max_tokens', 'length'],
    ['tool_use', 'tool_calls'],
    ['guardrail_intervened', 'content_filter'],
    ['content_filtered', 'content_filter'],
  ])('maps stopReason %s to %s', (stopReason, expected) => {
    const completion = bedrockAdapter.parseChatResponse({ output: { message: { role: 'assistant', content: [{ text: 'x' }] } }, stopReason, usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 } }, target());
    expect((completion.choices[0] as any).finish_reason).toBe(expected);
    expect(completion.usage).toEqual({ prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 } });
  });

  it('gives null content for a tool-only answer and a 502 for a body that is not a Converse answer', () => {
    const completion = bedrockAdapter.parseChatResponse({ output: { message: { role: 'assistant', content: [{ toolUse: { toolUseId: 't', name: 'f', input: {} } }] } }, stopReason: 'tool_use' }, target());
    expect((completion.choices[0] as any).message.content).toBeNull();
    expect(() => bedrockAdapter.parseChatResponse({ choices: [] }, target())).toThrow(GatewayError);
  });
});

describe('bedrockAdapter stream decoder (AWS event stream)', () => {
  const expected = [
    { role: 'assistant', content: '' },
    { reasoning_content: 'thinking' },
    { content: 'Hel' },
    { content: 'lo ü' },
    { tool_calls: [{ index: 0, id: 'tooluse_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] },
    { tool_calls: [{ index: 0, function: { arguments: '{"ci' } }] },
    { tool_calls: [{ index: 0, function: { arguments: 'ty":"Pa' } }] },
    { tool_calls: [{ index: 0, function: { arguments: 'ris"}' } }] },
    {},
  ];

  it('decodes whole frames into OpenAI chunks, finish reason and a usage chunk', () => {
    const { chunks, complete, perRead } = decodeAll(nativeStream());
    expect(complete).toBe(true);
    expect(deltas(chunks)).toEqual(expected);
    // Arguments are relayed as they arrive, one chunk per native delta, never buffered.
    expect(perRead).toEqual([1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1]);
    const finish = chunks[chunks.length - 2] as ChatCompletionChunk;
    expect((finish.choices[0] as any).finish_reason).toBe('tool_calls');
    const last = chunks[chunks.length - 1] as ChatCompletionChunk;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 7000, completion_tokens: 300, total_tokens: 7300, prompt_tokens_details: { cached_tokens: 5000, cache_write_tokens: 800 } });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk')).toBe(true);
  });

  it('keeps usage out of the stream when the client did not ask for it, and reports it to the gateway', () => {
    const { chunks, usage, complete } = decodeAll(nativeStream(), PLAIN_STREAM);
    expect(complete).toBe(true);
    expect(chunks.every((chunk) => chunk.choices.length === 1 && !chunk.usage)).toBe(true);
    expect(usage).toMatchObject({ prompt_tokens: 7000, completion_tokens: 300 });
  });

  it('reassembles frames split at every byte and at arbitrary boundaries', () => {
    const all = Buffer.concat(nativeStream());
    const bytewise = [...all].map((byte) => Buffer.from([byte]));
    expect(deltas(decodeAll(bytewise).chunks)).toEqual(expected);
    const uneven: Buffer[] = [];
    for (let i = 0, size = 1; i < all.length; i += size, size = (size * 7) % 61 + 1) uneven.push(all.subarray(i, i + size));
    const decoded = decodeAll(uneven);
    expect(deltas(decoded.chunks)).toEqual(expected);
    expect(decoded.complete).toBe(true);
  });

  it('reports an incomplete stream when messageStop never came or a frame is cut', () => {
    expect(decodeAll(nativeStream().slice(0, 5)).complete).toBe(false);
    const all = Buffer.concat(nativeStream());
    expect(decodeAll([all.subarray(0, all.length - 3)]).complete).toBe(false);
  });

  it('turns exception frames into retryable GatewayErrors, keeping what came before', () => {
    const decoder = bedrockAdapter.createStreamDecoder(target(), PLAIN_STREAM);
    const before = decoder.push(Buffer.concat([event('messageStart', { role: 'assistant' }), event('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'partial' } }), exception('modelStreamErrorException', 'The model stream failed.')]));
    expect(deltas(before)).toEqual([{ role: 'assistant', content: '' }, { content: 'partial' }]);
    let error: unknown;
    try {
      decoder.end();
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ status: 502, retryable: true, code: 'modelStreamErrorException', message: 'The model stream failed.' });

    const throttled = bedrockAdapter.createStreamDecoder(target(), PLAIN_STREAM);
    expect(() => throttled.push(exception('throttlingException', 'Too many requests, please wait before trying again.'))).toThrow(
      expect.objectContaining({ status: 429, type: 'rate_limit_error', retryable: true }),
    );
  });

  it('rejects a frame whose checksum is wrong', () => {
    const bad = Buffer.from(event('messageStart', { role: 'assistant' }));
    bad.writeUInt8(bad.readUInt8(bad.length - 1) ^ 0xff, bad.length - 1);
    expect(() => bedrockAdapter.createStreamDecoder(target(), PLAIN_STREAM).push(bad)).toThrow(expect.objectContaining({ status: 502, code: 'invalid_upstream_response' }));
  });

  it('gives a tool that takes no arguments "{}", as OpenAI streams it (a stop without an input delta left "")', () => {
    const { chunks } = decodeAll([
      event('messageStart', { role: 'assistant' }),
      event('contentBlockStart', { contentBlockIndex: 0, start: { toolUse: { toolUseId: 'tooluse_now', name: 'now' } } }),
      event('contentBlockStop', { contentBlockIndex: 0 }),
      event('contentBlockStart', { contentBlockIndex: 1, start: { toolUse: { toolUseId: 'tooluse_w', name: 'weather' } } }),
      event('contentBlockDelta', { contentBlockIndex: 1, delta: { toolUse: { input: '{"city":"Oslo"}' } } }),
      event('contentBlockStop', { contentBlockIndex: 1 }),
      event('messageStop', { stopReason: 'tool_use' }),
    ]);
    const args = new Map<number, string>();
    for (const delta of deltas(chunks)) for (const call of delta.tool_calls ?? []) args.set(call.index, (args.get(call.index) ?? '') + (call.function?.arguments ?? ''));
    expect([...args.values()]).toEqual(['{}', '{"city":"Oslo"}']);
  });
});

describe('bedrockAdapter.parseError', () => {
  const awsError = (type: string) => ({ 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`, 'content-type': 'application/json' });

  it.each([
    [400, 'ValidationException', 400, 'invalid_request_error', false],
    [403, 'AccessDeniedException', 403, 'permission_error', false],
    [403, 'UnrecognizedClientException', 401, 'authentication_error', false],
    [403, 'InvalidSignatureException', 401, 'authentication_error', false],
    [404, 'ResourceNotFoundException', 404, 'not_found_error', false],
    [429, 'ThrottlingException', 429, 'rate_limit_error', true],
    [408, 'ModelTimeoutException', 504, 'timeout_error', true],
    [424, 'ModelErrorException', 502, 'upstream_error', true],
    [500, 'InternalServerException', 500, 'upstream_error', true],
    [503, 'ServiceUnavailableException', 503, 'service_unavailable', true],
    [429, 'ModelNotReadyException', 429, 'rate_limit_error', true],
  ])('maps HTTP %i %s to %i %s', (status, type, expectedStatus, expectedType, retryable) => {
    const error = bedrockAdapter.parseError(status, { ...awsError(type), 'retry-after': '3' }, JSON.stringify({ message: `what ${type} says` }), target());
    expect(error).toMatchObject({ status: expectedStatus, type: expectedType, code: type, retryable, upstreamStatus: status, message: `what ${type} says` });
    expect(error.headers).toEqual({ 'retry-after': '3' });
  });

  it('copes with a capitalised Message, a __type field and a body that is not JSON', () => {
    expect(bedrockAdapter.parseError(400, {}, '{"__type":"com.amazon.coral.validate#ValidationException","Message":"bad"}', target())).toMatchObject({ code: 'ValidationException', message: 'bad' });
    expect(bedrockAdapter.parseError(502, {}, '<html>Bad Gateway</html>', target())).toMatchObject({ status: 502, type: 'upstream_error', retryable: true, message: '<html>Bad Gateway</html>' });
  });
});

describe('bedrockAdapter embeddings (InvokeModel)', () => {
  const TITAN = 'amazon.titan-embed-text-v2:0';
  const COHERE = 'cohere.embed-english-v3';
  const embedTarget = (model: string, options: Parameters<typeof makeTarget>[0] = {}): Target => target({ model, ...options });
  const build = (request: Partial<EmbeddingsRequest>, model: string, options: Parameters<typeof makeTarget>[0] = {}): UpstreamRequest =>
    bedrockAdapter.buildEmbeddingsRequest!({ model: `bedrock/${model}`, input: 'x', ...request } as EmbeddingsRequest, embedTarget(model, options));
  const refusal = (request: Partial<EmbeddingsRequest>, model: string): GatewayError => {
    try {
      build(request, model);
    } catch (err) {
      expect(err).toBeInstanceOf(GatewayError);
      return err as GatewayError;
    }
    throw new Error('expected a GatewayError');
  };
  const parse = (body: unknown, request: Partial<EmbeddingsRequest>, model: string) =>
    bedrockAdapter.parseEmbeddingsResponse!(body, embedTarget(model), { model: `bedrock/${model}`, input: 'x', ...request } as EmbeddingsRequest);
  const decode = (encoded: unknown): number[] => Array.from(new Float32Array(new Uint8Array(Buffer.from(encoded as string, 'base64')).buffer));

  it('tells the body family from the model id, its ARN or inference profile id', () => {
    expect(embeddingModel(TITAN)).toBe('titan-v2');
    expect(embeddingModel('amazon.titan-embed-text-v1')).toBe('titan-v1');
    expect(embeddingModel(COHERE)).toBe('cohere');
    expect(embeddingModel('cohere.embed-multilingual-v3')).toBe('cohere');
    expect(embeddingModel('us.cohere.embed-english-v3')).toBe('cohere');
    expect(embeddingModel(`arn:aws:bedrock:us-east-1::foundation-model/${TITAN}`)).toBe('titan-v2');
    expect(embeddingModel(MODEL)).toBeNull();
  });

  it('posts Titan V2 one inputText with dimensions and normalize to /model/{id}/invoke', () => {
    const built = build({ input: ['hello titan'], dimensions: 512 }, TITAN, { options: { region: 'eu-west-1' } });
    expect(built.method).toBe('POST');
    expect(built.url).toBe('https://bedrock-runtime.eu-west-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke');
    expect(built.headers).toMatchObject({ 'content-type': 'application/json', accept: 'application/json' });
    expect(JSON.parse(built.body as string)).toEqual({ inputText: 'hello titan', dimensions: 512, normalize: true });
    expect(JSON.parse(build({ input: 'plain string' }, TITAN).body as string)).toEqual({ inputText: 'plain string', normalize: true });
    expect(JSON.parse(build({ input: 'g1' }, 'amazon.titan-embed-text-v1').body as string)).toEqual({ inputText: 'g1' });
  });

  it('posts Cohere Embed the texts as search documents with float embeddings', () => {
    const built = build({ input: ['one', 'two', 'three'], user: 'u-1', encoding_format: 'base64' }, COHERE);
    expect(built.url).toBe('https://bedrock-runtime.us-east-1.amazonaws.com/model/cohere.embed-english-v3/invoke');
    expect(JSON.parse(built.body as string)).toEqual({ texts: ['one', 'two', 'three'], input_type: 'search_document', embedding_types: ['float'] });
    // The native size may be asked for; it changes nothing in the body.
    expect(JSON.parse(build({ input: 'a', dimensions: 1024 }, 'cohere.embed-multilingual-v3').body as string)).toEqual({ texts: ['a'], input_type: 'search_document', embedding_types: ['float'] });
  });

  it("passes a client's Cohere input_type on, as the cohere provider does (a query is not embedded as a document)", () => {
    expect(JSON.parse(build({ input: 'where is Paris?', input_type: 'search_query' }, COHERE).body as string)).toEqual({ texts: ['where is Paris?'], input_type: 'search_query', embedding_types: ['float'] });
    expect(refusal({ input: 'a', input_type: 7 }, COHERE)).toMatchObject({ status: 400, param: 'input_type' });
  });

  it('refuses token arrays, several texts for Titan, more than 96 texts for Cohere, unsupported dimensions and non-embedding models', () => {
    for (const input of [[1, 2, 3], [[1, 2], [3]]]) {
      for (const model of [TITAN, COHERE]) {
        expect(refusal({ input }, model)).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'input', message: expect.stringMatching(/token-array/) });
      }
    }
    expect(refusal({ input: ['a', 'b'] }, TITAN)).toMatchObject({ status: 400, param: 'input', message: expect.stringMatching(/one text per request/) });
    expect(refusal({ input: Array.from({ length: 97 }, (_, i) => `t${i}`) }, COHERE)).toMatchObject({ status: 400, param: 'input', message: expect.stringContaining('at most 96') });
    expect(() => build({ input: Array.from({ length: 96 }, (_, i) => `t${i}`) }, COHERE)).not.toThrow();
    expect(refusal({ dimensions: 256 }, COHERE)).toMatchObject({ status: 400, param: 'dimensions' });
    expect(refusal({ dimensions: 256 }, 'amazon.titan-embed-text-v1')).toMatchObject({ status: 400, param: 'dimensions' });
    expect(refusal({}, MODEL)).toMatchObject({ status: 400, param: 'model', code: 'embeddings_not_supported' });
  });

  it('maps a Titan answer with its inputTextTokenCount, as floats or as base64 float32 bytes', () => {
    const native = { embedding: [0.5, -0.25, 0.125], inputTextTokenCount: 7, embeddingsByType: { float: [0.5, -0.25, 0.125] } };
    expect(parse(native, { encoding_format: 'float' }, TITAN)).toEqual({
      object: 'list',
      data: [{ object: 'embedding', index: 0, embedding: [0.5, -0.25, 0.125] }],
      model: `bedrock/${TITAN}`,
      usage: { prompt_tokens: 7, total_tokens: 7 },
    });
    const encoded = parse(native, { encoding_format: 'base64' }, TITAN).data[0]?.embedding;
    expect(typeof encoded).toBe('string');
    expect(decode(encoded)).toEqual([0.5, -0.25, 0.125]);
  });

  it('maps a Cohere answer in input order and estimates its tokens (Bedrock reports them only in a header)', () => {
    const texts = ['first text', 'second, longer text'];
    const native = { id: 'abc', texts, response_type: 'embeddings_by_type', embeddings: { float: [[0.1, 0.2], [0.3, 0.4]] } };
    const answer = parse(native, { input: texts, encoding_format: 'base64' }, COHERE);
    expect(answer.data.map((item) => item.index)).toEqual([0, 1]);
    expect(decode(answer.data[0]?.embedding)).toEqual(Array.from(new Float32Array([0.1, 0.2])));
    expect(decode(answer.data[1]?.embedding)).toEqual(Array.from(new Float32Array([0.3, 0.4])));
    const expected = countTextTokens(texts[0] as string) + countTextTokens(texts[1] as string);
    expect(expected).toBeGreaterThan(0);
    expect(answer.usage).toEqual({ prompt_tokens: expected, total_tokens: expected });
    // An `embeddings_floats` answer (no embedding_types) carries a bare list.
    expect(parse({ id: 'x', texts: ['a'], response_type: 'embeddings_floats', embeddings: [[1, 2]] }, { input: ['a'], encoding_format: 'float' }, COHERE).data[0]?.embedding).toEqual([1, 2]);
  });

  it('answers 502 for embeddings answers that do not fit the request', () => {
    const invalid = expect.objectContaining({ status: 502, code: 'invalid_upstream_response', retryable: true });
    expect(() => parse({ inputTextTokenCount: 3 }, {}, TITAN)).toThrow(invalid);
    expect(() => parse('nope', {}, TITAN)).toThrow(invalid);
    expect(() => parse({ embeddings: { int8: [[1]] } }, { input: ['a'] }, COHERE)).toThrow(invalid);
    expect(() => parse({ embeddings: { float: [[0.1]] } }, { input: ['a', 'b'] }, COHERE)).toThrow(invalid);
  });
});

describe('bedrockAdapter.authorize', () => {
  const request = (): UpstreamRequest => bedrockAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, target({ options: { region: 'eu-central-1' } }));
  const saved = { ...process.env };
  afterEach(() => {
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_BEARER_TOKEN_BEDROCK']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  /** SigV4 computed independently, step by step as AWS documents it, to check the adapter's signature. */
  function expectedSignature(signed: UpstreamRequest, secret: string, region: string): string {
    const url = new URL(signed.url);
    const names = Object.keys(signed.headers).filter((name) => name !== 'authorization').sort();
    const canonicalPath = url.pathname.split('/').map((segment) => encodeURIComponent(segment)).join('/');
    const payloadHash = createHash('sha256').update(signed.body ?? '').digest('hex');
    const canonical = ['POST', canonicalPath, '', ...names.map((n) => `${n}:${String(signed.headers[n]).trim()}`), '', names.join(';'), payloadHash].join('\n');
    const date = signed.headers['x-amz-date'] as string;
    const scope = `${date.slice(0, 8)}/${region}/bedrock/aws4_request`;
    const toSign = ['AWS4-HMAC-SHA256', date, scope, createHash('sha256').update(canonical).digest('hex')].join('\n');
    let key: Buffer = createHmac('sha256', `AWS4${secret}`).update(date.slice(0, 8)).digest();
    for (const part of [region, 'bedrock', 'aws4_request']) key = createHmac('sha256', key).update(part).digest();
    return createHmac('sha256', key).update(toSign).digest('hex');
  }

  it('signs with SigV4 for the configured region, over the double-encoded path and the body', async () => {
    const t = target({ options: { region: 'eu-central-1' } });
    const signed = await bedrockAdapter.authorize!(request(), t);
    const auth = signed.headers.authorization as string;
    expect(auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/bedrock\/aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/);
    expect(signed.headers.host).toBe('bedrock-runtime.eu-central-1.amazonaws.com');
    expect(signed.headers['x-amz-content-sha256']).toBe(createHash('sha256').update(signed.body ?? '').digest('hex'));
    expect(auth.split('Signature=')[1]).toBe(expectedSignature(signed, 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'eu-central-1'));
    expect(signed.body).toBe(request().body);
  });

  it('adds the session token of a three-part key and takes the region from the host when none is configured', async () => {
    const t = target({ apiKey: 'AKID:SECRET:SESSIONTOKEN', baseUrl: 'https://bedrock-runtime.ap-south-1.amazonaws.com' });
    const built = bedrockAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, t);
    const signed = await bedrockAdapter.authorize!(built, t);
    expect(signed.headers['x-amz-security-token']).toBe('SESSIONTOKEN');
    expect(signed.headers.authorization).toContain('/ap-south-1/bedrock/aws4_request');
    expect(signed.headers.authorization).toContain('x-amz-security-token');
  });

  it("takes the region from a PrivateLink endpoint's host (vpce-….bedrock-runtime.<region>.vpce.amazonaws.com) when none is configured", async () => {
    // Signed for us-east-1 instead, every call through a VPC endpoint in another region was refused by AWS (credential scope).
    const t = target({ baseUrl: 'https://vpce-0a1b2c3d4e5f67890-abcdefgh.bedrock-runtime.eu-west-1.vpce.amazonaws.com' });
    const built = bedrockAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: 'hi' }] }, t);
    expect(built.url.startsWith('https://vpce-0a1b2c3d4e5f67890-abcdefgh.bedrock-runtime.eu-west-1.vpce.amazonaws.com/model/')).toBe(true);
    const signed = await bedrockAdapter.authorize!(built, t);
    expect(signed.headers.authorization).toContain('/eu-west-1/bedrock/aws4_request');
    expect((signed.headers.authorization as string).split('Signature=')[1]).toBe(expectedSignature(signed, 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'eu-west-1'));
  });

  it('signs an embeddings InvokeModel request over its path and body', async () => {
    const t = target({ model: 'amazon.titan-embed-text-v2:0', options: { region: 'eu-central-1' } });
    const built = bedrockAdapter.buildEmbeddingsRequest!({ model: 'bedrock/amazon.titan-embed-text-v2:0', input: 'sign me' }, t);
    const signed = await bedrockAdapter.authorize!(built, t);
    const auth = signed.headers.authorization as string;
    expect(auth).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-central-1\/bedrock\/aws4_request, SignedHeaders=accept;content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/);
    expect(signed.url).toMatch(/\/model\/amazon\.titan-embed-text-v2%3A0\/invoke$/);
    expect(signed.headers['x-amz-content-sha256']).toBe(createHash('sha256').update(built.body ?? '').digest('hex'));
    expect(auth.split('Signature=')[1]).toBe(expectedSignature(signed, 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'eu-central-1'));
    // Another body gives another signature: the body is covered.
    const other = await bedrockAdapter.authorize!({ ...built, body: built.body?.replace('sign me', 'sign you') }, t);
    expect(other.headers.authorization).not.toBe(auth);
  });

  it("signs a conversation of megabytes (a long Claude Code session) without holding the event loop, and correctly", async () => {
    // SigV4 hashes the whole body. A SHA-256 written in JavaScript held the event loop 40-80 ms a megabyte, on every
    // attempt: every other request on the gateway waited meanwhile. Node's own hash takes a few.
    const t = target({ options: { region: 'eu-central-1' } });
    const long = 'a long conversation about the codebase '.repeat(200_000);
    const built = bedrockAdapter.buildChatRequest({ model: 'x', messages: [{ role: 'user', content: long }] }, t);
    expect(built.body?.length).toBeGreaterThan(7_000_000);
    await bedrockAdapter.authorize!(built, t); // the first call compiles the signer's code
    let longest = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    try {
      last = performance.now();
      const signed = await bedrockAdapter.authorize!(built, t);
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(signed.headers['x-amz-content-sha256']).toBe(createHash('sha256').update(built.body ?? '').digest('hex'));
      expect((signed.headers.authorization as string).split('Signature=')[1]).toBe(expectedSignature(signed, 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY', 'eu-central-1'));
    } finally {
      clearInterval(ticker);
    }
    expect(longest).toBeLessThan(150);
  });

  it('sends a Bedrock API key as a bearer token', async () => {
    const signed = await bedrockAdapter.authorize!(request(), target({ apiKey: 'ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl' }));
    expect(signed.headers.authorization).toBe('Bearer ABSKQmVkcm9ja0FQSUtleS1leGFtcGxl');
    expect(signed.headers['x-amz-date']).toBeUndefined();
  });

  it('falls back to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, then AWS_BEARER_TOKEN_BEDROCK, else 401', async () => {
    delete process.env.AWS_ACCESS_KEY_ID;
    delete process.env.AWS_SECRET_ACCESS_KEY;
    delete process.env.AWS_SESSION_TOKEN;
    delete process.env.AWS_BEARER_TOKEN_BEDROCK;
    await expect(bedrockAdapter.authorize!(request(), target({ apiKey: null }))).rejects.toMatchObject({ status: 401, type: 'authentication_error' });
    process.env.AWS_BEARER_TOKEN_BEDROCK = 'envtoken';
    expect((await bedrockAdapter.authorize!(request(), target({ apiKey: null }))).headers.authorization).toBe('Bearer envtoken');
    process.env.AWS_ACCESS_KEY_ID = 'AKIDENV';
    process.env.AWS_SECRET_ACCESS_KEY = 'SECRETENV';
    expect((await bedrockAdapter.authorize!(request(), target({ apiKey: null }))).headers.authorization).toContain('Credential=AKIDENV/');
    await expect(bedrockAdapter.authorize!(request(), target({ apiKey: 'a:b:c:d' }))).rejects.toMatchObject({ status: 401 });
  });
});

describe('bedrock cost contract', () => {
  const provider = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { bedrock: { api_key: 'AKID:SECRET' } } }) }, {}, 1).providers.get('bedrock');

  function expectCatalogPrice(usage: CompletionUsage): void {
    if (!provider) throw new Error('no bedrock provider');
    const reference = calcPrice(
      { input_tokens: USAGE.inputTokens + USAGE.cacheReadInputTokens + USAGE.cacheWriteInputTokens, output_tokens: USAGE.outputTokens, cache_read_tokens: USAGE.cacheReadInputTokens, cache_write_tokens: USAGE.cacheWriteInputTokens },
      MODEL,
      { providerId: 'aws' },
    );
    expect(reference?.total_price).toBeGreaterThan(0);
    const cost = costOf(provider, MODEL, tokenUsageFromOpenAI(usage));
    expect(cost.source).toBe('catalog');
    expect(Math.abs(cost.usd - (reference?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  }

  it('prices a Converse answer with cache reads and writes exactly as genai-prices does', () => {
    const completion = bedrockAdapter.parseChatResponse({ output: { message: { role: 'assistant', content: [{ text: 'x' }] } }, stopReason: 'end_turn', usage: USAGE }, target());
    expectCatalogPrice(completion.usage as CompletionUsage);
  });

  it('prices a ConverseStream answer the same way', () => {
    const usage = decodeAll(nativeStream()).chunks.at(-1)?.usage;
    expectCatalogPrice(usage as CompletionUsage);
  });
});

describe("bedrockAdapter: an Anthropic client's own body for Claude (InvokeModel, native pass-through)", () => {
  const client = { model: `bedrock/${MODEL}`, max_tokens: 50, top_k: 5, stream: true, messages: [{ role: 'user', content: 'hi' }], future_field: { a: 1 } };
  const native = { format: 'anthropic', body: client };
  const request = { model: `bedrock/${MODEL}`, messages: [{ role: 'user', content: 'hi' }] } as ChatCompletionRequest;

  it("speaks Anthropic's format to Claude (base ids, inference profiles, ARNs naming it) and Converse to the others", () => {
    for (const model of [MODEL, 'us.anthropic.claude-sonnet-4-5-20250929-v1:0', 'arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-haiku-20240307-v1:0']) {
      expect(bedrockAdapter.nativeFormat?.(target({ model }))).toBe('anthropic');
    }
    for (const model of ['us.amazon.nova-pro-v1:0', 'meta.llama3-70b-instruct-v1:0', 'arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123']) {
      expect(bedrockAdapter.nativeFormat?.(target({ model }))).toBe('bedrock');
    }
  });

  it('sends the body as written, without model and stream, with the Bedrock version, on invoke-with-response-stream for a stream', () => {
    const built = bedrockAdapter.buildChatRequest({ ...request, stream: true }, target({ baseUrl: 'https://bedrock-runtime.{region}.amazonaws.com' }), native);
    expect(built.url).toBe(`https://bedrock-runtime.us-east-1.amazonaws.com/model/${encodeURIComponent(MODEL)}/invoke-with-response-stream`);
    expect(built.headers['x-amzn-bedrock-accept']).toBe('application/json');
    const { model: _model, stream: _stream, ...rest } = client;
    expect(JSON.parse(built.body ?? '')).toEqual({ ...rest, anthropic_version: 'bedrock-2023-05-31' });
    expect(bedrockAdapter.buildChatRequest(request, target(), native).url).toMatch(/\/invoke$/);
  });

  it("moves the client's betas into anthropic_beta, unless the body has its own; keeps an anthropic_version the client wrote", () => {
    const betas = ['context-1m-2025-08-07', 'interleaved-thinking-2025-05-14'];
    expect(JSON.parse(bedrockAdapter.buildChatRequest(request, target(), { ...native, betas }).body ?? '').anthropic_beta).toEqual(betas);
    const own = { ...native, betas, body: { ...client, anthropic_beta: ['token-efficient-tools-2025-02-19'], anthropic_version: 'bedrock-2099-01-01' } };
    const sent = JSON.parse(bedrockAdapter.buildChatRequest(request, target(), own).body ?? '');
    expect(sent.anthropic_beta).toEqual(['token-efficient-tools-2025-02-19']);
    expect(sent.anthropic_version).toBe('bedrock-2099-01-01');
    expect(JSON.parse(bedrockAdapter.buildChatRequest(request, target(), { ...native, betas: [] }).body ?? '')).not.toHaveProperty('anthropic_beta');
  });

  it("reads Claude's InvokeModel answer (Anthropic's message) and a Converse answer for the same model", () => {
    const message = { id: 'msg_bdrk_1', type: 'message', role: 'assistant', model: 'claude-3-5-sonnet-20241022', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 2 } };
    const completion = bedrockAdapter.parseChatResponse(message, target());
    expect(completion.choices[0]).toMatchObject({ message: { content: 'hello' }, finish_reason: 'stop' });
    expect(completion.usage).toMatchObject({ prompt_tokens: 10, completion_tokens: 2 });
    const converse = bedrockAdapter.parseChatResponse({ output: { message: { role: 'assistant', content: [{ text: 'hi' }] } }, stopReason: 'end_turn', usage: { inputTokens: 3, outputTokens: 1 } }, target());
    expect(converse.choices[0]).toMatchObject({ message: { content: 'hi' } });
  });

  /** One Anthropic stream event in a `chunk` frame, as InvokeModelWithResponseStream sends it. */
  const chunk = (data: Record<string, unknown>): Buffer => event('chunk', { bytes: Buffer.from(JSON.stringify(data)).toString('base64'), p: 'abc' });
  const claudeStream = (): Buffer[] => [
    chunk({ type: 'message_start', message: { id: 'msg_bdrk_1', type: 'message', role: 'assistant', model: 'claude-3-5-sonnet-20241022', content: [], stop_reason: null, usage: { input_tokens: 12, output_tokens: 1 } } }),
    chunk({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hel' } }),
    chunk({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'lo' } }),
    chunk({ type: 'content_block_stop', index: 0 }),
    chunk({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }),
    chunk({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: 12, outputTokenCount: 4, invocationLatency: 40, firstByteLatency: 10 } }),
  ];

  it('decodes the chunk frames, split across reads anyhow, into the chunks and keeps each event as it came', () => {
    const decoder = bedrockAdapter.createStreamDecoder(target(), { ...request, stream: true }, native);
    const bytes = Buffer.concat(claudeStream());
    const chunks: ChatCompletionChunk[] = [];
    const events: Array<{ event: string; data: string }> = [];
    for (let i = 0; i < bytes.length; i += 7) {
      chunks.push(...decoder.push(bytes.subarray(i, i + 7)));
      events.push(...(decoder.takeNative?.() ?? []));
    }
    const tail = decoder.end();
    expect(tail.complete).toBe(true);
    chunks.push(...tail.chunks);
    expect(chunks.map((c) => (c.choices[0] as any)?.delta?.content ?? '').join('')).toBe('Hello');
    expect(chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 12, completion_tokens: 4 });
    expect(events.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(JSON.parse(events.at(-1)?.data ?? '{}')['amazon-bedrock-invocationMetrics']).toMatchObject({ outputTokenCount: 4 });
  });

  it('fails a stream cut before message_stop, and one whose exception frame follows its events, after relaying them', () => {
    const cut = bedrockAdapter.createStreamDecoder(target(), { ...request, stream: true }, native);
    cut.push(Buffer.concat(claudeStream().slice(0, 4)));
    expect(cut.end().complete).toBe(false);

    const broken = bedrockAdapter.createStreamDecoder(target(), { ...request, stream: true }, native);
    const relayed = broken.push(Buffer.concat([...claudeStream().slice(0, 3), exception('throttlingException', 'Too many tokens')]));
    expect(relayed.length).toBeGreaterThan(0);
    let error: unknown = null;
    try {
      broken.push(Buffer.alloc(0));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(GatewayError);
    expect(error).toMatchObject({ status: 429, message: 'Too many tokens' });
  });

  it('refuses a chunk without its bytes as a bad upstream answer', () => {
    const decoder = bedrockAdapter.createStreamDecoder(target(), { ...request, stream: true }, native);
    expect(() => decoder.push(event('chunk', { p: 'abc' }))).toThrow(/a chunk event without its bytes/);
  });
});
