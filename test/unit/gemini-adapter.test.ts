import { calcPrice } from '@pydantic/genai-prices';
import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';
import { configFileSchema } from '../../src/config/schema.js';
import type { ChatCompletionChunk, ChatCompletionRequest, EmbeddingsRequest } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { costOf } from '../../src/catalog/prices.js';
import { tokenUsageFromOpenAI } from '../../src/core/usage.js';
import { geminiAdapter } from '../../src/providers/gemini/index.js';
import { toGeminiSchema } from '../../src/wire/gemini/schema.js';
import { adapterFor, vendorById } from '../../src/providers/registry.js';
import { countTextTokens } from '../../src/tokens/tokenizer.js';
import { embeddingFor, validateGeminiEmbedRequest, validateGeminiRequest } from '../upstream/gemini-upstream.js';
import { makeTarget } from './targets.js';

/** A streamed request whose client asked for the usage chunk. */
const STREAMED = { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } };

const target = makeTarget({ vendorId: 'gemini', model: 'gemini-2.5-flash', apiKey: 'AIza-test' });

function build(request: Partial<ChatCompletionRequest>, t = target): { url: string; headers: Record<string, string>; body: any } {
  const upstream = geminiAdapter.buildChatRequest({ model: 'gemini/gemini-2.5-flash', messages: [], ...request } as ChatCompletionRequest, t);
  return { url: upstream.url, headers: upstream.headers, body: JSON.parse(upstream.body as string) };
}

function buildBody(request: Partial<ChatCompletionRequest>): any {
  const { body } = build(request);
  // Every body the adapter builds must pass the checks the real API makes.
  expect(validateGeminiRequest(body)).toBeNull();
  return body;
}

function decode(bytes: Buffer, cuts: number[], t = target): { chunks: ChatCompletionChunk[]; complete: boolean } {
  const decoder = geminiAdapter.createStreamDecoder(t, STREAMED);
  const chunks: ChatCompletionChunk[] = [];
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    chunks.push(...decoder.push(bytes.subarray(from, cut)));
    from = cut;
  }
  const end = decoder.end();
  return { chunks: [...chunks, ...end.chunks], complete: end.complete };
}

const sse = (...events: unknown[]): Buffer => Buffer.from(events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(''), 'utf8');

describe('registry and vendor row', () => {
  it('registers the gemini format and vendor', () => {
    expect(adapterFor('gemini')).toBe(geminiAdapter);
    expect(vendorById('gemini')).toMatchObject({
      format: 'gemini',
      defaultBaseUrl: 'https://generativelanguage.googleapis.com',
      versionPath: '/v1beta',
      auth: { kind: 'header', header: 'x-goog-api-key' },
      keyEnv: ['GEMINI_API_KEY', 'GOOGLE_API_KEY'],
      baseUrlEnv: ['GEMINI_BASE_URL', 'GOOGLE_GEMINI_BASE_URL'],
      catalogId: 'google',
    });
  });
});

describe('buildChatRequest', () => {
  it('posts to generateContent, or streamGenerateContent with alt=sse, with the key header', () => {
    const plain = build({ messages: [{ role: 'user', content: 'hi' }] });
    expect(plain.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent');
    expect(plain.headers['x-goog-api-key']).toBe('AIza-test');
    expect(plain.headers.authorization).toBeUndefined();
    const streamed = build({ messages: [{ role: 'user', content: 'hi' }], stream: true }, makeTarget({ vendorId: 'gemini', model: 'tunedModels/abc', baseUrl: 'http://127.0.0.1:9/v1beta/' }));
    expect(streamed.url).toBe('http://127.0.0.1:9/v1beta/tunedModels/abc:streamGenerateContent?alt=sse');
  });

  it("calls a client's own body (native pass-through) on the API version it addressed, when the base URL names one", () => {
    const request = { model: 'gemini/gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] } as ChatCompletionRequest;
    const native = { format: 'gemini', body: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }, apiVersion: 'v1alpha' };
    expect(geminiAdapter.buildChatRequest(request, target, native).url).toBe('https://generativelanguage.googleapis.com/v1alpha/models/gemini-2.5-flash:generateContent');
    const v1 = makeTarget({ vendorId: 'gemini', model: 'gemini-2.5-flash', baseUrl: 'http://127.0.0.1:9/v1beta/' });
    expect(geminiAdapter.buildChatRequest(request, v1, { ...native, apiVersion: 'v1' }).url).toBe('http://127.0.0.1:9/v1/models/gemini-2.5-flash:generateContent');
    // A base URL naming no Gemini version (a proxy's own path) is kept; so is a translated request's version.
    const proxy = makeTarget({ vendorId: 'gemini', model: 'gemini-2.5-flash', baseUrl: 'http://127.0.0.1:9/gemini-proxy' });
    expect(geminiAdapter.buildChatRequest(request, proxy, native).url).toBe('http://127.0.0.1:9/gemini-proxy/models/gemini-2.5-flash:generateContent');
    expect(geminiAdapter.buildChatRequest(request, target).url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent');
  });

  it('maps roles, the system prompt and drops fields Gemini has no use for', () => {
    const body = buildBody({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'developer', content: [{ type: 'text', text: 'and kind' }] },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
        { role: 'user', content: [{ type: 'text', text: 'again' }] },
      ],
      user: 'u1',
      metadata: { a: 'b' },
      stream_options: { include_usage: true },
    });
    expect(body).toEqual({
      systemInstruction: { parts: [{ text: 'be brief' }, { text: 'and kind' }] },
      contents: [
        { role: 'user', parts: [{ text: 'hi' }] },
        { role: 'model', parts: [{ text: 'hello' }] },
        { role: 'user', parts: [{ text: 'again' }] },
      ],
    });
  });

  it('maps data: images to inlineData and http images to fileData', () => {
    const body = buildBody({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is this' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
            { type: 'image_url', image_url: { url: 'https://example.com/cat.webp?x=1', detail: 'high' } },
          ],
        },
      ],
    });
    expect(body.contents[0].parts).toEqual([
      { text: 'what is this' },
      { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
      { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/cat.webp?x=1' } },
    ]);
  });

  it('maps tools (schema cleaned), tool_choice, tool calls and tool results', () => {
    const body = buildBody({
      messages: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' }, extra_content: { google: { thought_signature: 'sig1' } } },
            { id: 'call_2', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":21}' },
        { role: 'tool', tool_call_id: 'call_2', content: 'sunny' },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather',
            description: 'Weather by city',
            strict: true,
            parameters: {
              $schema: 'http://json-schema.org/draft-07/schema#',
              type: 'object',
              additionalProperties: false,
              properties: { city: { type: 'string', format: 'city-name' }, unit: { type: ['string', 'null'], enum: ['c', 'f'] } },
              required: ['city'],
            },
          },
        },
        { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} } } },
      ],
      tool_choice: { type: 'function', function: { name: 'weather' } },
    });
    expect(body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'weather',
            description: 'Weather by city',
            parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', nullable: true, enum: ['c', 'f'] } }, required: ['city'] },
          },
          { name: 'now' },
        ],
      },
    ]);
    expect(body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } });
    expect(body.contents[1]).toEqual({
      role: 'model',
      parts: [
        { functionCall: { name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'sig1' },
        { functionCall: { name: 'weather', args: { city: 'Rome' } } },
      ],
    });
    expect(body.contents[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { name: 'weather', response: { temp: 21 } } },
        { functionResponse: { name: 'weather', response: { result: 'sunny' } } },
      ],
    });
  });

  it.each([
    ['auto', { mode: 'AUTO' }],
    ['none', { mode: 'NONE' }],
    ['required', { mode: 'ANY' }],
  ])('maps tool_choice %s', (choice, expected) => {
    const body = buildBody({ messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'number' } } } } }], tool_choice: choice });
    expect(body.toolConfig.functionCallingConfig).toEqual(expected);
  });

  it('adds the documented stand-in signature to replayed calls for Gemini 3 only', () => {
    const messages = [
      { role: 'user', content: 'x' },
      { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '' } }] },
      { role: 'tool', tool_call_id: 'c', content: '[1,2]' },
    ];
    const three = build({ messages }, makeTarget({ vendorId: 'gemini', model: 'gemini-3-pro-preview' })).body;
    expect(three.contents[1].parts[0]).toEqual({ functionCall: { name: 'f', args: {} }, thoughtSignature: 'skip_thought_signature_validator' });
    expect(three.contents[2].parts[0].functionResponse.response).toEqual({ result: [1, 2] });
    expect(buildBody({ messages }).contents[1].parts[0]).toEqual({ functionCall: { name: 'f', args: {} } });
  });

  it('refuses a tool result with an image (a function response carries text) instead of dropping the image', () => {
    const messages = [
      { role: 'user', content: 'x' },
      { role: 'assistant', tool_calls: [{ id: 'c', type: 'function', function: { name: 'shot', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'c', content: [{ type: 'text', text: 'see image' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
    ];
    expect(() => buildBody({ messages })).toThrow(expect.objectContaining({ status: 400, param: 'messages[2].content[1]', message: expect.stringContaining('text parts only') }));
    // Text parts alone are joined, as before.
    const text = buildBody({ messages: [...messages.slice(0, 2), { role: 'tool', tool_call_id: 'c', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }] });
    expect(text.contents[2].parts[0].functionResponse.response).toEqual({ result: 'ab' });
  });

  it('maps generation settings and response formats', () => {
    const body = buildBody({
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 50,
      max_completion_tokens: 64,
      temperature: 0.3,
      top_p: 0.8,
      stop: 'END',
      n: 2,
      seed: 7,
      response_format: { type: 'json_schema', json_schema: { name: 'r', strict: true, schema: { type: 'object', additionalProperties: false, properties: { a: { type: 'integer' } } } } },
    });
    expect(body.generationConfig).toEqual({
      maxOutputTokens: 64,
      temperature: 0.3,
      topP: 0.8,
      stopSequences: ['END'],
      candidateCount: 2,
      seed: 7,
      responseMimeType: 'application/json',
      responseSchema: { type: 'object', properties: { a: { type: 'integer' } } },
    });
    expect(buildBody({ messages: [{ role: 'user', content: 'x' }], max_tokens: 5, stop: ['a', 'b'], response_format: { type: 'json_object' } }).generationConfig).toEqual({
      maxOutputTokens: 5,
      stopSequences: ['a', 'b'],
      responseMimeType: 'application/json',
    });
  });

  it('maps reasoning_effort to a thinking budget, or a level on Gemini 3', () => {
    expect(buildBody({ messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'low' }).generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1024, includeThoughts: true });
    const three = build({ messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'high' }, makeTarget({ vendorId: 'gemini', model: 'gemini-3-flash-preview' })).body;
    expect(three.generationConfig.thinkingConfig).toEqual({ thinkingLevel: 'high', includeThoughts: true });
  });

  it('rejects what Gemini cannot express with a 400', () => {
    const cases: Array<Partial<ChatCompletionRequest>> = [
      { messages: [{ role: 'tool', tool_call_id: 'nope', content: 'x' }] },
      { messages: [{ role: 'user', content: [{ type: 'file', file: { file_id: 'file-1' } }] }] },
      { messages: [{ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '[1]' } }] }] },
      { messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'custom', custom: { name: 'x' } }] },
    ];
    for (const request of cases) {
      let caught: unknown;
      try {
        build(request);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(GatewayError);
      expect(caught).toMatchObject({ status: 400, type: 'invalid_request_error' });
      expect((caught as Error).message).toMatch(/^gemini: /);
    }
  });

  it('does not mutate the request', () => {
    const request = { model: 'gemini/x', messages: [{ role: 'user', content: 'hi' }], tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', additionalProperties: false, properties: { a: { type: 'string' } } } } }] };
    const copy = structuredClone(request);
    build(request);
    expect(request).toEqual(copy);
  });
});

describe('toGeminiSchema', () => {
  it('keeps only OpenAPI-subset keys, recursively', () => {
    expect(
      toGeminiSchema({
        type: 'object',
        $defs: { x: {} },
        properties: { list: { type: 'array', items: { type: 'object', additionalProperties: true, properties: { k: { const: 'v' } } } }, choice: { oneOf: [{ type: 'string' }, { type: 'number' }] } },
      }),
    ).toEqual({
      type: 'object',
      properties: { list: { type: 'array', items: { type: 'object', properties: { k: { enum: ['v'] } } } }, choice: { anyOf: [{ type: 'string' }, { type: 'number' }] } },
    });
  });

  it('inlines local references, the keys beside one on top, and gives null for one it cannot inline', () => {
    const address = { type: 'object', properties: { city: { type: 'string' } } };
    expect(toGeminiSchema({ $defs: { A: address }, type: 'object', properties: { a: { $ref: '#/$defs/A', description: 'home' }, b: { anyOf: [{ $ref: '#/$defs/A' }, { type: 'string' }] } } })).toEqual({
      type: 'object',
      properties: { a: { ...address, description: 'home' }, b: { anyOf: [address, { type: 'string' }] } },
    });
    expect(toGeminiSchema({ definitions: { 'a/b': address }, $ref: '#/definitions/a~1b' })).toEqual(address);
    expect(toGeminiSchema({ type: 'object', properties: { next: { $ref: '#' } } })).toBeNull();
    expect(toGeminiSchema({ $defs: { A: { type: 'object', properties: { b: { $ref: '#/$defs/B' } } }, B: { type: 'array', items: { $ref: '#/$defs/A' } } }, $ref: '#/$defs/A' })).toBeNull();
    expect(toGeminiSchema({ type: 'object', properties: { x: { $ref: 'https://example.com/x.json' } } })).toBeNull();
    // The subset's enum holds strings only: numbers and booleans (an enum or a const) go as JSON Schema.
    expect(toGeminiSchema({ type: 'object', properties: { n: { type: 'integer', enum: [1, 2] } } })).toBeNull();
    expect(toGeminiSchema({ type: 'object', properties: { on: { const: true } } })).toBeNull();
    expect(toGeminiSchema({ type: 'string', enum: ['a', 'b'] })).toEqual({ type: 'string', enum: ['a', 'b'] });
  });
});

describe('parseChatResponse', () => {
  it('maps text, thoughts, usage and the finish reason', () => {
    const completion = geminiAdapter.parseChatResponse(
      {
        candidates: [
          { content: { role: 'model', parts: [{ text: 'thinking...', thought: true }, { text: 'Hello' }, { text: ' there' }] }, finishReason: 'STOP', index: 0 },
        ],
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, thoughtsTokenCount: 30, cachedContentTokenCount: 40, totalTokenCount: 150 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'abc',
      },
      target,
    );
    expect(completion).toMatchObject({
      id: 'chatcmpl-abc',
      object: 'chat.completion',
      model: 'gemini-2.5-flash',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there', reasoning_content: 'thinking...', refusal: null }, finish_reason: 'stop', logprobs: null }],
      usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150, prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 30 } },
    });
    expect(typeof completion.created).toBe('number');
  });

  it('maps function calls to tool calls with generated ids and the thought signature', () => {
    const completion = geminiAdapter.parseChatResponse(
      { candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'sig' }] }, finishReason: 'STOP' }] },
      target,
    );
    const choice = completion.choices[0] as any;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    expect(choice.message.tool_calls).toEqual([
      { id: expect.stringMatching(/^call_[0-9a-f]{24}$/), type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' }, extra_content: { google: { thought_signature: 'sig' } } },
    ]);
  });

  it.each([
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['BLOCKLIST', 'content_filter'],
    ['PROHIBITED_CONTENT', 'content_filter'],
    ['SPII', 'content_filter'],
    // Vertex AI's Model Armor and the image filters of image-generating models block the answer too.
    ['MODEL_ARMOR', 'content_filter'],
    ['IMAGE_SAFETY', 'content_filter'],
    ['IMAGE_PROHIBITED_CONTENT', 'content_filter'],
    ['IMAGE_RECITATION', 'content_filter'],
    ['OTHER', 'stop'],
  ])('maps finishReason %s to %s', (reason, expected) => {
    const completion = geminiAdapter.parseChatResponse({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: reason }] }, target);
    expect((completion.choices[0] as any).finish_reason).toBe(expected);
  });

  it('answers a prompt blocked before generation as an empty, filtered completion', () => {
    const completion = geminiAdapter.parseChatResponse({ promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 } }, target);
    expect(completion.choices).toEqual([{ index: 0, message: { role: 'assistant', content: '', refusal: null }, finish_reason: 'content_filter', logprobs: null }]);
    expect(completion.usage).toMatchObject({ prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 });
  });

  it('fails an answer with neither a candidate nor a block reason as 502 invalid_upstream_response, retryable', () => {
    for (const body of [{ usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 } }, { candidates: [] }, {}]) {
      expect(() => geminiAdapter.parseChatResponse(body, target)).toThrow(expect.objectContaining({ status: 502, code: 'invalid_upstream_response', retryable: true }));
    }
  });

  it('maps several candidates to several choices', () => {
    const completion = geminiAdapter.parseChatResponse(
      { candidates: [0, 1].map((index) => ({ content: { parts: [{ text: `a${index}` }] }, finishReason: 'STOP', index })) },
      target,
    );
    expect(completion.choices.map((c: any) => [c.index, c.message.content])).toEqual([[0, 'a0'], [1, 'a1']]);
  });
});

describe('createStreamDecoder', () => {
  const usage = { promptTokenCount: 12, candidatesTokenCount: 6, thoughtsTokenCount: 4, totalTokenCount: 22 };
  const events = [
    { candidates: [{ content: { role: 'model', parts: [{ text: 'Let me think', thought: true }] }, index: 0 }], usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 }, responseId: 'r1' },
    { candidates: [{ content: { role: 'model', parts: [{ text: 'Héllo ' }] }, index: 0 }], usageMetadata: { promptTokenCount: 12, totalTokenCount: 12 }, responseId: 'r1' },
    { candidates: [{ content: { role: 'model', parts: [{ text: 'wörld' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: usage, responseId: 'r1' },
  ];

  it('decodes text, reasoning, finish and usage whatever the byte boundaries', () => {
    const bytes = sse(...events);
    const reference = decode(bytes, []);
    for (const cuts of [[1], [7, 8, 9], [bytes.indexOf('é') + 1], Array.from({ length: bytes.length - 1 }, (_, i) => i + 1)]) {
      const { chunks, complete } = decode(bytes, cuts);
      expect(complete).toBe(true);
      expect(chunks.map((c) => ({ choices: c.choices, usage: c.usage }))).toEqual(reference.chunks.map((c) => ({ choices: c.choices, usage: c.usage })));
    }
    const { chunks } = reference;
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === 'chatcmpl-r1' && c.model === 'gemini-2.5-flash')).toBe(true);
    expect(chunks.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }],
      [{ index: 0, delta: { reasoning_content: 'Let me think' }, finish_reason: null, logprobs: null }],
      [{ index: 0, delta: { content: 'Héllo ' }, finish_reason: null, logprobs: null }],
      [{ index: 0, delta: { content: 'wörld' }, finish_reason: null, logprobs: null }],
      [{ index: 0, delta: {}, finish_reason: 'stop', logprobs: null }],
      [],
    ]);
    expect(chunks[5]?.usage).toEqual({
      prompt_tokens: 12,
      completion_tokens: 10,
      total_tokens: 22,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 4 },
    });
  });

  it("keeps each event's running usageMetadata as usageSoFar, in no chunk", () => {
    const decoder = geminiAdapter.createStreamDecoder(target, { model: 'm', messages: [], stream: true, stream_options: { include_usage: true } });
    expect(decoder.usageSoFar?.()).toBeNull();
    const chunks = decoder.push(sse({ ...events[0], usageMetadata: { promptTokenCount: 12, cachedContentTokenCount: 10, thoughtsTokenCount: 4, totalTokenCount: 16 } }));
    expect(chunks.every((chunk) => chunk.usage === undefined)).toBe(true);
    expect(decoder.usageSoFar?.()).toMatchObject({ prompt_tokens: 12, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 10 }, completion_tokens_details: { reasoning_tokens: 4 } });
    decoder.push(sse(events[2]));
    expect(decoder.usageSoFar?.()).toMatchObject({ prompt_tokens: 12, completion_tokens: 10 });
  });

  it('emits a function call as one tool_calls delta as soon as it arrives', () => {
    const decoder = geminiAdapter.createStreamDecoder(target, STREAMED);
    const first = decoder.push(
      sse({ candidates: [{ content: { role: 'model', parts: [{ functionCall: { name: 'a', args: { x: 1 } } }, { functionCall: { name: 'b', args: {} } }] }, index: 0 }] }),
    );
    const calls = first.flatMap((c) => (c.choices[0] as any)?.delta?.tool_calls ?? []);
    expect(calls).toEqual([
      { index: 0, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'a', arguments: '{"x":1}' } },
      { index: 1, id: expect.stringMatching(/^call_/), type: 'function', function: { name: 'b', arguments: '{}' } },
    ]);
    const rest = decoder.push(sse({ candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }], usageMetadata: usage }));
    expect(rest.map((c) => (c.choices[0] as any).finish_reason)).toEqual(['tool_calls']);
    expect(decoder.end().complete).toBe(true);
  });

  it('is incomplete when the body ends before a finishReason', () => {
    const { chunks, complete } = decode(sse(events[0], events[1]), []);
    expect(complete).toBe(false);
    expect(chunks.length).toBeGreaterThan(0);
  });

  it('finishes a blocked prompt with content_filter', () => {
    const { chunks, complete } = decode(sse({ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' }, usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 } }), []);
    expect(complete).toBe(true);
    expect(chunks.map((c) => (c.choices[0] as any)?.finish_reason ?? null)).toEqual([null, 'content_filter', null]);
  });

  it('throws a retryable error with the upstream status for an error event inside the stream (as the same error answered at once)', () => {
    const decoder = geminiAdapter.createStreamDecoder(target, STREAMED);
    decoder.push(sse(events[1]));
    let caught: unknown;
    try {
      decoder.push(sse({ error: { code: 500, message: 'An internal error has occurred.', status: 'INTERNAL' } }));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(GatewayError);
    expect(caught).toMatchObject({ status: 500, retryable: true, code: 'INTERNAL', message: 'An internal error has occurred.' });
  });

  it('keeps a rate limit inside the stream a 429 (RESOURCE_EXHAUSTED), as a client can back off from it', () => {
    const decoder = geminiAdapter.createStreamDecoder(target, STREAMED);
    decoder.push(sse(events[1]));
    expect(() => decoder.push(sse({ error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } }))).toThrow(
      expect.objectContaining({ status: 429, type: 'rate_limit_error', retryable: true, code: 'RESOURCE_EXHAUSTED' }),
    );
  });
});

describe('parseError', () => {
  const body = (code: number, status: string, message: string, details?: unknown[]) => JSON.stringify({ error: { code, message, status, ...(details ? { details } : {}) } });

  it.each([
    [400, 'INVALID_ARGUMENT', 'invalid_request_error', false],
    [400, 'FAILED_PRECONDITION', 'invalid_request_error', false],
    [403, 'PERMISSION_DENIED', 'permission_error', false],
    [404, 'NOT_FOUND', 'not_found_error', false],
    [429, 'RESOURCE_EXHAUSTED', 'rate_limit_error', true],
    [500, 'INTERNAL', 'upstream_error', true],
    [503, 'UNAVAILABLE', 'upstream_error', true],
    [504, 'DEADLINE_EXCEEDED', 'upstream_error', true],
  ])('maps %i %s', (status, googleStatus, type, retryable) => {
    const error = geminiAdapter.parseError(status, { 'retry-after': '3' }, body(status, googleStatus, 'boom'), target);
    expect(error).toMatchObject({ status, type, code: googleStatus, message: 'boom', retryable, upstreamStatus: status, headers: { 'retry-after': '3' } });
  });

  it('maps an invalid API key (400 API_KEY_INVALID) to 401 authentication_error', () => {
    const details = [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com' }];
    const error = geminiAdapter.parseError(400, {}, body(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', details), target);
    expect(error).toMatchObject({ status: 401, type: 'authentication_error', code: 'invalid_api_key', retryable: false, upstreamStatus: 400, message: 'API key not valid. Please pass a valid API key.' });
  });

  it('turns RetryInfo.retryDelay into retry-after, and reads array-wrapped errors and plain text', () => {
    const details = [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '12.5s' }];
    expect(geminiAdapter.parseError(429, {}, body(429, 'RESOURCE_EXHAUSTED', 'quota', details), target).headers).toEqual({ 'retry-after': '13' });
    expect(geminiAdapter.parseError(503, {}, `[${body(503, 'UNAVAILABLE', 'overloaded')}]`, target)).toMatchObject({ status: 503, message: 'overloaded', retryable: true });
    expect(geminiAdapter.parseError(502, {}, '<html>Bad Gateway</html>', target)).toMatchObject({ status: 502, retryable: true, message: 'gemini: upstream answered HTTP 502 with an HTML page ("Bad Gateway").' });
  });
});

describe('cost contract', () => {
  const provider = resolveRuntimeConfig({ api: {}, file: configFileSchema.parse({ providers: { gemini: { api_key: 'k' } } }) }, {}, 1).providers.get('gemini');

  it.each(['gemini-2.5-flash', 'gemini-2.5-pro'])('prices %s usage with cache reads and thinking like genai-prices', (model) => {
    if (!provider) throw new Error('no gemini provider');
    for (const native of [
      { promptTokenCount: 12_000, cachedContentTokenCount: 8_000, candidatesTokenCount: 700, thoughtsTokenCount: 300, totalTokenCount: 13_000 },
      { promptTokenCount: 250_000, cachedContentTokenCount: 100_000, candidatesTokenCount: 1_000, thoughtsTokenCount: 2_000, totalTokenCount: 253_000 },
      { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    ]) {
      const completion = geminiAdapter.parseChatResponse({ candidates: [{ content: { parts: [{ text: 'x' }] }, finishReason: 'STOP' }], usageMetadata: native }, target);
      const cost = costOf(provider, model, tokenUsageFromOpenAI(completion.usage!));
      const reference = calcPrice(
        {
          input_tokens: native.promptTokenCount,
          cache_read_tokens: native.cachedContentTokenCount ?? 0,
          output_tokens: native.candidatesTokenCount + (native.thoughtsTokenCount ?? 0),
          output_reasoning_tokens: native.thoughtsTokenCount ?? 0,
        },
        model,
        { providerId: 'google' },
      );
      expect(cost.source).toBe('catalog');
      expect(reference?.provider.id).toBe('google');
      expect(Math.abs(cost.usd - (reference?.total_price ?? NaN))).toBeLessThanOrEqual(1.01e-9);
    }
  });
});

describe('embeddings', () => {
  const embedTarget = makeTarget({ vendorId: 'gemini', model: 'gemini-embedding-001', apiKey: 'AIza-test', baseUrl: 'https://generativelanguage.googleapis.com/v1beta/' });
  const request = (fields: Partial<EmbeddingsRequest>): EmbeddingsRequest => ({ model: 'gemini/gemini-embedding-001', input: 'x', ...fields });
  const buildEmbeddings = (fields: Partial<EmbeddingsRequest>, t = embedTarget) => {
    const upstream = geminiAdapter.buildEmbeddingsRequest!(request(fields), t);
    const body = JSON.parse(upstream.body as string);
    // Every body the adapter builds must pass the checks the real API makes.
    expect(validateGeminiEmbedRequest(body, t.model)).toBeNull();
    return { upstream, body };
  };
  const parse = (body: unknown, fields: Partial<EmbeddingsRequest>) => geminiAdapter.parseEmbeddingsResponse!(body, embedTarget, request(fields));
  const decodeBase64 = (text: string): number[] => {
    const bytes = Buffer.from(text, 'base64');
    return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4));
  };

  it('posts one EmbedContentRequest per text to batchEmbedContents with the key header', () => {
    const { upstream, body } = buildEmbeddings({ input: ['first text', 'second text'], dimensions: 768, user: 'u-1', encoding_format: 'base64' });
    expect(upstream.method).toBe('POST');
    expect(upstream.url).toBe('https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(upstream.headers).toMatchObject({ 'content-type': 'application/json', 'x-goog-api-key': 'AIza-test' });
    expect(body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'first text' }] }, outputDimensionality: 768 },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'second text' }] }, outputDimensionality: 768 },
      ],
    });
  });

  it('sends a single string as one request, and passes a task type sent as an extra field', () => {
    expect(buildEmbeddings({ input: 'hello' }).body).toEqual({ requests: [{ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'hello' }] } }] });
    expect(buildEmbeddings({ input: 'q', task_type: 'retrieval_query' }).body.requests[0].taskType).toBe('RETRIEVAL_QUERY');
    expect(() => buildEmbeddings({ task_type: 7 })).toThrow(GatewayError);
    expect(buildEmbeddings({ input: ['a', 'b'], title: 'T' }).body.requests.map((r: { title?: string }) => r.title)).toEqual(['T', 'T']);
    expect(buildEmbeddings({ input: ['a', 'b'], title: [null, 'B'] }).body.requests.map((r: { title?: string }) => r.title)).toEqual([undefined, 'B']);
    expect(() => buildEmbeddings({ input: ['a', 'b'], title: ['only one'] })).toThrow(GatewayError);
  });

  it('refuses token-array inputs with a 400 on input', () => {
    for (const input of [[1, 2, 3], [[1, 2], [3]]]) {
      let caught: unknown;
      try {
        geminiAdapter.buildEmbeddingsRequest!(request({ input }), embedTarget);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(GatewayError);
      expect(caught).toMatchObject({ status: 400, type: 'invalid_request_error', param: 'input', message: expect.stringContaining('token arrays') });
    }
  });

  it('refuses more inputs than Gemini takes in one batch', () => {
    const input = Array.from({ length: 101 }, (_, i) => `text ${i}`);
    expect(() => geminiAdapter.buildEmbeddingsRequest!(request({ input }), embedTarget)).toThrow(/at most 100 inputs/);
    expect(buildEmbeddings({ input: input.slice(0, 100) }).body.requests).toHaveLength(100);
  });

  it('maps the answer to OpenAI\'s list in input order with Gemini\'s prompt token count', () => {
    const answer = { embeddings: [{ values: [0.5, -0.25] }, { values: [0.125, 1] }], usageMetadata: { promptTokenCount: 9, promptTokenDetails: [{ modality: 'TEXT', tokenCount: 9 }] } };
    expect(parse(answer, { input: ['a', 'b'], encoding_format: 'float' })).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.5, -0.25] },
        { object: 'embedding', index: 1, embedding: [0.125, 1] },
      ],
      model: 'gemini/gemini-embedding-001',
      usage: { prompt_tokens: 9, total_tokens: 9 },
    });
  });

  it('encodes base64 as little-endian float32 that decodes back to the vectors', () => {
    const vectors = [embeddingFor('one', 16), embeddingFor('two', 16)];
    const response = parse({ embeddings: vectors.map((values) => ({ values })), usageMetadata: { promptTokenCount: 2 } }, { input: ['one', 'two'], encoding_format: 'base64' });
    expect(typeof response.data[0]?.embedding).toBe('string');
    expect(response.data.map((d) => decodeBase64(d.embedding as string))).toEqual(vectors);
  });

  it('estimates prompt tokens with the tokenizer when Gemini reports none', () => {
    const input = ['the quick brown fox', 'jumps over the lazy dog'];
    const estimate = countTextTokens(input[0]!) + countTextTokens(input[1]!);
    expect(estimate).toBeGreaterThan(0);
    expect(parse({ embeddings: [{ values: [1] }, { values: [0] }] }, { input }).usage).toEqual({ prompt_tokens: estimate, total_tokens: estimate });
  });

  it('rejects answers that do not match the request as a retryable 502', () => {
    for (const bad of [null, {}, { embeddings: [{ values: [1] }] }, { embeddings: [{ values: [1] }, {}] }, { embeddings: [{ values: ['x'] }, { values: [1] }] }]) {
      let caught: unknown;
      try {
        parse(bad, { input: ['a', 'b'] });
      } catch (err) {
        caught = err;
      }
      expect(caught).toMatchObject({ status: 502, code: 'invalid_upstream_response', retryable: true });
    }
  });

  it('maps a batchEmbedContents error body through parseError', () => {
    const text = JSON.stringify({ error: { code: 400, message: '* BatchEmbedContentsRequest.requests: at most 100 requests can be in one batch\n', status: 'INVALID_ARGUMENT' } });
    expect(geminiAdapter.parseError(400, {}, text, embedTarget)).toMatchObject({ status: 400, type: 'invalid_request_error', code: 'INVALID_ARGUMENT', retryable: false });
  });
});

describe('the scripted upstream\'s embedding checks', () => {
  const ok = { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'x' }] } };
  it('rejects OpenAI-shaped bodies, wrong models, empty text and oversized batches', () => {
    expect(validateGeminiEmbedRequest({ model: 'gemini-embedding-001', input: ['x'] }, 'gemini-embedding-001')?.error.message).toContain('Unknown name "model"');
    expect(validateGeminiEmbedRequest({ requests: [{ ...ok, model: 'models/other' }] }, 'gemini-embedding-001')?.error.status).toBe('INVALID_ARGUMENT');
    expect(validateGeminiEmbedRequest({ requests: [{ content: ok.content }] }, 'gemini-embedding-001')?.error.message).toContain('model');
    expect(validateGeminiEmbedRequest({ requests: [{ ...ok, content: { parts: [{ text: '' }] } }] }, 'gemini-embedding-001')?.error.message).toContain('empty text');
    expect(validateGeminiEmbedRequest({ requests: Array.from({ length: 101 }, () => ok) }, 'gemini-embedding-001')?.error.message).toContain('at most 100 requests');
    expect(validateGeminiEmbedRequest({ requests: [{ ...ok, outputDimensionality: 4000 }] }, 'gemini-embedding-001')).not.toBeNull();
    expect(validateGeminiEmbedRequest({ requests: [ok] }, 'gemini-embedding-001')).toBeNull();
  });

  it('derives unit vectors from the text and truncates them for a smaller outputDimensionality', () => {
    const full = embeddingFor('hello', 3072);
    expect(full).toHaveLength(3072);
    expect(Math.hypot(...full)).toBeCloseTo(1, 5);
    expect(embeddingFor('hello', 3072)).toEqual(full);
    expect(embeddingFor('hello!', 3072)).not.toEqual(full);
    expect(embeddingFor('hello', 3072, 8)).toEqual(full.slice(0, 8));
  });
});
