import { describe, expect, it } from 'vitest';
import type { RuntimeConfig } from '../../src/core/config.js';
import { estimateGeminiTokens } from '../../src/dialects/gemini/count-tokens.js';
import { canonicalEmbeddingsRequest, geminiEmbeddingsResponse, readEmbedRequests } from '../../src/dialects/gemini/embeddings.js';
import { googleErrorBody } from '../../src/dialects/gemini/errors.js';
import { googleStatusName } from '../../src/wire/gemini/errors.js';
import { canonicalGeminiModel, keepsGeminiFields, parseModelPath } from '../../src/dialects/gemini/model-name.js';
import { canonicalEffort, canonicalGenerateRequest, readGenerateRequest } from '../../src/dialects/gemini/request.js';
import { generateContentResponse, type GeminiReplyContext } from '../../src/dialects/gemini/response.js';
import { geminiFinishReason } from '../../src/wire/gemini/finish-reasons.js';
import { geminiUsageMetadata } from '../../src/wire/gemini/usage.js';
import { fromGeminiSchema } from '../../src/wire/gemini/schema.js';
import { errorEvent, GeminiStreamRenderer, sseFrame } from '../../src/dialects/gemini/stream.js';
import type { ChatCompletion, ChatCompletionChunk } from '../../src/core/canonical.js';
import { GatewayError } from '../../src/core/errors.js';
import { countPromptTokens } from '../../src/tokens/tokenizer.js';
import { completionFromGemini, toGeminiRequest, toGeminiSchema } from '../../src/providers/gemini/index.js';

/** Just what the dialect reads of a config: route names and providers' wire formats. */
function config(routes: string[] = [], providers: Record<string, string> = {}): RuntimeConfig {
  return {
    routes: new Map(routes.map((name) => [name, { name }])),
    providers: new Map(Object.entries(providers).map(([name, format]) => [name, { name, vendor: { format } }])),
  } as unknown as RuntimeConfig;
}

const GEMINI = { geminiFields: true };
const ELSEWHERE = { geminiFields: false };

function translate(body: Record<string, unknown>, options = GEMINI, stream = false) {
  return canonicalGenerateRequest(readGenerateRequest(body), 'gemini/gemini-2.5-flash', stream, options);
}

function user(text: string) {
  return { role: 'user', parts: [{ text }] };
}

function badRequest(run: () => unknown): GatewayError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).status).toBe(400);
    return err as GatewayError;
  }
  throw new Error('expected a 400');
}

describe('model names and paths', () => {
  it('makes bare names gemini/ names and passes provider names and routes through', () => {
    const cfg = config(['smart', 'team-*']);
    expect(canonicalGeminiModel(cfg, 'gemini-2.5-flash')).toBe('gemini/gemini-2.5-flash');
    expect(canonicalGeminiModel(cfg, 'openai/gpt-4o-mini')).toBe('openai/gpt-4o-mini');
    expect(canonicalGeminiModel(cfg, 'smart')).toBe('smart');
    expect(canonicalGeminiModel(cfg, 'team-a')).toBe('team-a');
  });

  it('keeps Gemini extras only for direct names of Gemini-format providers', () => {
    const cfg = config(['smart'], { gemini: 'gemini', vertex: 'vertex', openai: 'openai' });
    expect(keepsGeminiFields(cfg, 'gemini/gemini-2.5-flash')).toBe(true);
    expect(keepsGeminiFields(cfg, 'vertex/gemini-2.5-pro')).toBe(true);
    expect(keepsGeminiFields(cfg, 'openai/gpt-4o-mini')).toBe(false);
    expect(keepsGeminiFields(cfg, 'smart')).toBe(false);
    expect(keepsGeminiFields(cfg, 'nowhere/x')).toBe(false);
  });

  it('splits model and method at the last colon, decoding the model', () => {
    expect(parseModelPath('gemini-2.5-flash:generateContent')).toEqual({ model: 'gemini-2.5-flash', method: 'generateContent' });
    expect(parseModelPath('openai/gpt-4o-mini:streamGenerateContent')).toEqual({ model: 'openai/gpt-4o-mini', method: 'streamGenerateContent' });
    expect(parseModelPath('openai%2Fgpt-4o-mini:countTokens')).toEqual({ model: 'openai/gpt-4o-mini', method: 'countTokens' });
    expect(parseModelPath('bedrock/anthropic.claude-v2:0:batchEmbedContents')).toEqual({ model: 'bedrock/anthropic.claude-v2:0', method: 'batchEmbedContents' });
    expect(parseModelPath('text-embedding-004:embedContent')?.method).toBe('embedContent');
    expect(parseModelPath('gemini-2.5-flash:predict')).toBeNull();
    expect(parseModelPath('gemini-2.5-flash')).toBeNull();
    badRequest(() => parseModelPath('%E0%A4%A:generateContent'));
  });
});

describe('GenerateContentRequest -> canonical request', () => {
  it('refuses a body without contents', () => {
    expect(badRequest(() => readGenerateRequest({ contents: [] })).message).toContain('contents is not specified');
    badRequest(() => readGenerateRequest([]));
  });

  it('maps the system instruction, text turns and the generation config', () => {
    const { request, info } = translate({
      systemInstruction: { parts: [{ text: 'be terse' }, { text: 'and kind' }] },
      contents: [user('hi'), { role: 'model', parts: [{ text: 'hello' }, { text: ' there', thought: false }] }, user('again')],
      generationConfig: { maxOutputTokens: 64, temperature: 0.2, topP: 0.8, topK: 5, stopSequences: ['X'], candidateCount: 2, seed: 3, presencePenalty: 0.1, frequencyPenalty: 0.2 },
      safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_NONE' }],
    });
    expect(request).toEqual({
      model: 'gemini/gemini-2.5-flash',
      messages: [
        { role: 'system', content: 'be terse\nand kind' },
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello there' },
        { role: 'user', content: 'again' },
      ],
      max_completion_tokens: 64,
      temperature: 0.2,
      top_p: 0.8,
      top_k: 5,
      stop: ['X'],
      n: 2,
      seed: 3,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
    });
    expect(info.includeThoughts).toBe(false);
  });

  it('takes snake_case fields and a string system instruction, and drops replayed thoughts', () => {
    const { request } = translate({
      system_instruction: 'sys',
      contents: [user('q'), { role: 'model', parts: [{ text: 'pondering', thought: true }, { text: 'a' }] }, { parts: [{ text: 'no role means user' }] }],
      generation_config: { max_output_tokens: 9, stop_sequences: ['S'] },
    });
    expect(request.messages).toEqual([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'a' },
      { role: 'user', content: 'no role means user' },
    ]);
    expect(request).toMatchObject({ max_completion_tokens: 9, stop: ['S'] });
  });

  it('maps inline data and file links to OpenAI content parts', () => {
    const { request } = translate({
      contents: [
        {
          role: 'user',
          parts: [
            { text: 'look' },
            { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
            { inlineData: { mimeType: 'audio/wav', data: 'UklGRg==' } },
            { inlineData: { mimeType: 'application/pdf', data: 'JVBERi0=' } },
            { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/cat.jpg' } },
          ],
        },
      ],
    });
    expect(request.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          { type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } },
          { type: 'file', file: { file_data: 'data:application/pdf;base64,JVBERi0=' } },
          { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } },
        ],
      },
    ]);
    badRequest(() => translate({ contents: [{ role: 'user', parts: [{ inlineData: { data: 'x' } }] }] }));
    badRequest(() => translate({ contents: [{ role: 'user', parts: [{ executableCode: { code: 'print(1)' } }] }] }));
    badRequest(() => translate({ contents: [{ role: 'system', parts: [{ text: 'x' }] }] }));
    badRequest(() => translate({ contents: [{ role: 'user', parts: [] }] }));
  });

  it('turns function calls into tool_calls and matches responses by id, then name, then order', () => {
    const { request } = translate({
      contents: [
        user('weather and time?'),
        {
          role: 'model',
          parts: [
            { text: 'checking' },
            { functionCall: { name: 'weather', args: { city: 'Oslo' } }, thoughtSignature: 'sig-1' },
            { functionCall: { name: 'time', args: {} } },
            { functionCall: { id: 'given-id', name: 'weather', args: { city: 'Rome' } } },
          ],
        },
        {
          role: 'user',
          parts: [
            { functionResponse: { id: 'given-id', name: 'weather', response: { temp: 20 } } },
            { functionResponse: { name: 'time', response: { now: '12:00' } } },
            { functionResponse: { name: 'weather', response: { temp: 5 } } },
            { text: 'thanks' },
          ],
        },
      ],
    });
    expect(request.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: 'checking',
        tool_calls: [
          { id: 'call_1_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' }, extra_content: { google: { thought_signature: 'sig-1' } } },
          { id: 'call_1_2', type: 'function', function: { name: 'time', arguments: '{}' } },
          { id: 'given-id', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'given-id', content: '{"temp":20}' },
      { role: 'tool', tool_call_id: 'call_1_2', content: '{"now":"12:00"}' },
      { role: 'tool', tool_call_id: 'call_1_1', content: '{"temp":5}' },
      { role: 'user', content: 'thanks' },
    ]);
  });

  it('leaves thought signatures behind for non-Gemini targets, and refuses a response without a call', () => {
    const { request } = translate(
      { contents: [user('x'), { role: 'model', parts: [{ functionCall: { name: 'f', args: {} }, thoughtSignature: 'sig' }] }, { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] }] },
      ELSEWHERE,
    );
    expect(request.messages[1]).toEqual({ role: 'assistant', content: null, tool_calls: [{ id: 'call_1_0', type: 'function', function: { name: 'f', arguments: '{}' } }] });
    const error = badRequest(() => translate({ contents: [user('x'), { role: 'user', parts: [{ functionResponse: { name: 'f', response: {} } }] }] }));
    expect(error.message).toContain('function response turn comes immediately after a function call turn');
  });

  it('maps function declarations, their Gemini schemas and the calling config', () => {
    const tools = [
      {
        functionDeclarations: [
          { name: 'lookup', description: 'Looks up', parameters: { type: 'OBJECT', properties: { q: { type: 'STRING', nullable: true } }, required: ['q'], propertyOrdering: ['q'] } },
          { name: 'raw', parametersJsonSchema: { type: 'object', properties: { n: { type: 'number' } }, additionalProperties: false } },
          { name: 'bare' },
        ],
      },
    ];
    const { request } = translate({ contents: [user('x')], tools, toolConfig: { functionCallingConfig: { mode: 'AUTO' } } });
    expect(request.tools).toEqual([
      { type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object', properties: { q: { type: ['string', 'null'] } }, required: ['q'] } } },
      { type: 'function', function: { name: 'raw', parameters: { type: 'object', properties: { n: { type: 'number' } }, additionalProperties: false } } },
      { type: 'function', function: { name: 'bare' } },
    ]);
    expect(request.tool_choice).toBe('auto');
    const choice = (mode: string, allowedFunctionNames?: string[]) =>
      translate({ contents: [user('x')], tools, toolConfig: { functionCallingConfig: { mode, allowedFunctionNames } } }).request;
    expect(choice('NONE').tool_choice).toBe('none');
    expect(choice('ANY').tool_choice).toBe('required');
    expect(choice('ANY', ['raw']).tool_choice).toEqual({ type: 'function', function: { name: 'raw' } });
    const narrowed = choice('ANY', ['raw', 'bare']);
    expect(narrowed.tool_choice).toBe('required');
    expect((narrowed.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name)).toEqual(['raw', 'bare']);
    // No tools, no tool_choice (OpenAI refuses one without the other).
    expect(translate({ contents: [user('x')], toolConfig: { functionCallingConfig: { mode: 'ANY' } } }).request).not.toHaveProperty('tool_choice');
    badRequest(() => translate({ contents: [user('x')], tools: [{ googleSearch: {} }] }));
    badRequest(() => translate({ contents: [user('x')], tools, toolConfig: { functionCallingConfig: { mode: 'SOMETIMES' } } }));
  });

  it('maps response MIME types and schemas to response_format', () => {
    const format = (generationConfig: Record<string, unknown>) => translate({ contents: [user('x')], generationConfig }).request.response_format;
    expect(format({ responseMimeType: 'application/json' })).toEqual({ type: 'json_object' });
    expect(format({ responseMimeType: 'application/json', responseSchema: { type: 'ARRAY', items: { type: 'INTEGER' } } })).toEqual({
      type: 'json_schema',
      // An array root goes as an object's one property: OpenAI and Anthropic take only objects at the root.
      json_schema: { name: 'response', schema: { type: 'object', properties: { value: { type: 'array', items: { type: 'integer' } } }, required: ['value'], additionalProperties: false } },
    });
    expect(format({ responseMimeType: 'application/json', responseJsonSchema: { type: 'object', properties: { a: { const: 1 } } } })).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: { type: 'object', properties: { a: { const: 1 } } } },
    });
    expect(format({ responseMimeType: 'text/plain' })).toBeUndefined();
    badRequest(() => format({ responseMimeType: 'text/x.enum' }));
    badRequest(() => format({ temperature: 'hot' }));
  });

  it('maps thinking levels and budgets to reasoning_effort, the inverse of the outbound cut points', () => {
    expect(canonicalEffort({ thinkingLevel: 'HIGH' }, true)).toBe('high');
    expect(canonicalEffort({ thinkingLevel: 'low' }, false)).toBe('low');
    expect(canonicalEffort({ thinkingBudget: 1024 }, true)).toBe('low');
    expect(canonicalEffort({ thinkingBudget: 8192 }, true)).toBe('medium');
    expect(canonicalEffort({ thinkingBudget: 24576 }, true)).toBe('high');
    expect(canonicalEffort({ thinkingBudget: -1 }, true)).toBeUndefined();
    expect(canonicalEffort({ thinkingBudget: 0 }, true)).toBe('none');
    expect(canonicalEffort({ thinkingBudget: 0 }, false)).toBeUndefined();
    const { request, info } = translate({ contents: [user('x')], generationConfig: { thinkingConfig: { thinkingBudget: 3000, includeThoughts: true } } });
    expect(request.reasoning_effort).toBe('medium');
    expect(info.includeThoughts).toBe(true);
    for (const effort of ['low', 'medium', 'high']) {
      const budget = (toGeminiRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], reasoning_effort: effort }, 'gemini-2.5-flash').generationConfig as { thinkingConfig: { thinkingBudget: number } }).thinkingConfig.thinkingBudget;
      expect(canonicalEffort({ thinkingBudget: budget }, true)).toBe(effort);
    }
  });

  it('asks a stream for usage, and refuses cached content', () => {
    expect(translate({ contents: [user('x')] }, GEMINI, true).request).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(translate({ contents: [user('x')] }).request).not.toHaveProperty('stream');
    badRequest(() => translate({ contents: [user('x')], cachedContent: 'cachedContents/abc' }));
  });

  it('is the inverse of the outbound adapter: a Gemini request survives the round trip', () => {
    const original = {
      contents: [
        { role: 'user', parts: [{ text: 'weather?' }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }] },
        { role: 'model', parts: [{ functionCall: { name: 'weather', args: { city: 'Oslo' } }, thoughtSignature: 'sig' }] },
        { role: 'user', parts: [{ functionResponse: { name: 'weather', response: { temp: 3 } } }] },
      ],
      systemInstruction: { parts: [{ text: 'sys' }] },
      tools: [{ functionDeclarations: [{ name: 'weather', description: 'd', parameters: { type: 'object', properties: { city: { type: 'string', nullable: true } }, required: ['city'] } }] }],
      toolConfig: { functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } },
      generationConfig: { maxOutputTokens: 10, temperature: 0.1, stopSequences: ['x'], responseMimeType: 'application/json' },
    };
    const { request } = translate(original);
    expect(toGeminiRequest(request, 'gemini-2.5-flash')).toEqual(original);
  });
});

describe('schemas', () => {
  it('converts Gemini schemas to JSON Schema, which toGeminiSchema converts back', () => {
    const gemini = { type: 'OBJECT', properties: { a: { type: 'STRING', enum: ['x', 'y'], nullable: true }, b: { type: 'ARRAY', items: { type: 'NUMBER' } }, c: { anyOf: [{ type: 'STRING' }, { type: 'INTEGER' }] } }, required: ['a'] };
    const json = fromGeminiSchema(gemini);
    expect(json).toEqual({
      type: 'object',
      properties: { a: { type: ['string', 'null'], enum: ['x', 'y'] }, b: { type: 'array', items: { type: 'number' } }, c: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
      required: ['a'],
    });
    expect(toGeminiSchema(json)).toEqual({
      type: 'object',
      properties: { a: { type: 'string', enum: ['x', 'y'], nullable: true }, b: { type: 'array', items: { type: 'number' } }, c: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
      required: ['a'],
    });
  });
});

const REPLY = { model: 'gemini-2.5-flash', includeThoughts: false };

function completion(message: Record<string, unknown>, finish = 'stop', usage?: ChatCompletion['usage']): ChatCompletion {
  return { id: 'chatcmpl-resp42', object: 'chat.completion', model: 'm', choices: [{ index: 0, message, finish_reason: finish }], usage };
}

describe('canonical completion -> GenerateContentResponse', () => {
  it('maps finish reasons', () => {
    expect(geminiFinishReason('stop')).toBe('STOP');
    expect(geminiFinishReason('tool_calls')).toBe('STOP');
    expect(geminiFinishReason('length')).toBe('MAX_TOKENS');
    expect(geminiFinishReason('content_filter')).toBe('SAFETY');
  });

  it('maps usage, splitting thoughts out of completion tokens, the inverse of usageFromGemini', () => {
    const usage = { prompt_tokens: 10, completion_tokens: 30, total_tokens: 40, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 12 } };
    expect(geminiUsageMetadata(usage)).toEqual({ promptTokenCount: 10, candidatesTokenCount: 18, totalTokenCount: 40, cachedContentTokenCount: 4, thoughtsTokenCount: 12 });
    expect(geminiUsageMetadata({ prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 })).toEqual({ promptTokenCount: 1, candidatesTokenCount: 2, totalTokenCount: 3 });
    expect(geminiUsageMetadata(null)).toBeUndefined();
  });

  it('renders text, tool calls and reasoning', () => {
    const answer = completion(
      {
        role: 'assistant',
        content: 'calling',
        reasoning_content: 'hmm',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' }, extra_content: { google: { thought_signature: 'sig' } } }],
      },
      'tool_calls',
      { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
    );
    expect(generateContentResponse(answer, REPLY)).toEqual({
      candidates: [{ content: { role: 'model', parts: [{ text: 'calling' }, { functionCall: { id: 'call_1', name: 'f', args: { a: 1 } }, thoughtSignature: 'sig' }] }, finishReason: 'STOP', index: 0 }],
      usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 7, totalTokenCount: 12 },
      modelVersion: 'gemini-2.5-flash',
      responseId: 'resp42',
    });
    const withThoughts = generateContentResponse(answer, { ...REPLY, includeThoughts: true }) as { candidates: Array<{ content: { parts: unknown[] } }> };
    expect(withThoughts.candidates[0]?.content.parts[0]).toEqual({ text: 'hmm', thought: true });
  });

  it('is the inverse of completionFromGemini for a plain Gemini answer', () => {
    const gemini = {
      candidates: [{ content: { role: 'model', parts: [{ text: 'hello' }] }, finishReason: 'MAX_TOKENS', index: 0 }],
      usageMetadata: { promptTokenCount: 3, candidatesTokenCount: 2, totalTokenCount: 5 },
      modelVersion: 'gemini-2.5-flash',
      responseId: 'abc',
    };
    expect(generateContentResponse(completionFromGemini(gemini, 'gemini-2.5-flash', 'gemini'), REPLY)).toEqual(gemini);
  });

  it("gives a Gemini upstream's native_finish_reason back as it was, and ignores another format's", () => {
    const failed = { candidates: [{ content: { role: 'model', parts: [] }, finishReason: 'MALFORMED_FUNCTION_CALL', index: 0 }], responseId: 'f' };
    const completion = completionFromGemini(failed, 'gemini-2.5-flash', 'gemini');
    const finish = (reply: GeminiReplyContext) => (generateContentResponse(completion, reply) as { candidates: Array<{ finishReason: string }> }).candidates[0]?.finishReason;
    expect(finish({ ...REPLY, geminiUpstream: () => true })).toBe('MALFORMED_FUNCTION_CALL');
    // Unknown provenance (no check given) or another format (OpenRouter's own native_finish_reason): the mapping.
    expect(finish(REPLY)).toBe('STOP');
    expect(finish({ ...REPLY, geminiUpstream: () => false })).toBe('STOP');
    const renderer = new GeminiStreamRenderer({ ...REPLY, geminiUpstream: () => true });
    renderer.push(chunk([{ index: 0, delta: {}, finish_reason: 'stop', native_finish_reason: 'OTHER' }]));
    expect(renderer.end()[0]).toMatchObject({ candidates: [{ finishReason: 'OTHER' }] });
  });
});

function chunk(choices: unknown[], usage?: ChatCompletionChunk['usage']): ChatCompletionChunk {
  return { id: 'chatcmpl-r1', object: 'chat.completion.chunk', model: 'm', choices, ...(usage ? { usage } : {}) };
}

describe('canonical stream -> Gemini events', () => {
  it('sends text as it comes and holds the finish back for the usage', () => {
    const renderer = new GeminiStreamRenderer(REPLY);
    expect(renderer.push(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]))).toEqual([]);
    expect(renderer.push(chunk([{ index: 0, delta: { content: 'hel' }, finish_reason: null }]))).toEqual([
      { candidates: [{ content: { role: 'model', parts: [{ text: 'hel' }] }, index: 0 }], modelVersion: 'gemini-2.5-flash', responseId: 'r1' },
    ]);
    expect(renderer.push(chunk([{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }]))).toEqual([]);
    expect(renderer.push(chunk([], { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 }))).toEqual([]);
    expect(renderer.end()).toEqual([
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'lo' }] }, finishReason: 'STOP', index: 0 }],
        usageMetadata: { promptTokenCount: 2, candidatesTokenCount: 2, totalTokenCount: 4 },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'r1',
      },
    ]);
  });

  it('buffers tool call argument fragments until the call is complete', () => {
    const renderer = new GeminiStreamRenderer(REPLY);
    const out = [
      ...renderer.push(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'lookup', arguments: '' } }] }, finish_reason: null }])),
      ...renderer.push(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '{"q":' } }] }, finish_reason: null }])),
      ...renderer.push(chunk([{ index: 0, delta: { tool_calls: [{ index: 1, id: 'call_b', function: { name: 'other', arguments: '{}' } }] }, finish_reason: null }])),
      ...renderer.push(chunk([{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: '"cats"}' } }] }, finish_reason: null }])),
    ];
    expect(out).toEqual([]);
    renderer.push(chunk([{ index: 0, delta: {}, finish_reason: 'tool_calls' }]));
    const [last] = renderer.end();
    expect(last).toEqual({
      candidates: [
        {
          content: { role: 'model', parts: [{ functionCall: { id: 'call_a', name: 'lookup', args: { q: 'cats' } } }, { functionCall: { id: 'call_b', name: 'other', args: {} } }] },
          finishReason: 'STOP',
          index: 0,
        },
      ],
      modelVersion: 'gemini-2.5-flash',
      responseId: 'r1',
    });
  });

  it('sends reasoning as thought parts only when asked, and nothing at the end of an empty stream', () => {
    const thoughtful = new GeminiStreamRenderer({ ...REPLY, includeThoughts: true });
    expect(thoughtful.push(chunk([{ index: 0, delta: { reasoning_content: 'hmm' }, finish_reason: null }]))[0]).toMatchObject({ candidates: [{ content: { parts: [{ text: 'hmm', thought: true }] } }] });
    const quiet = new GeminiStreamRenderer(REPLY);
    expect(quiet.push(chunk([{ index: 0, delta: { reasoning_content: 'hmm' }, finish_reason: null }]))).toEqual([]);
    expect(quiet.end()).toEqual([]);
  });

  it('frames events and errors as Google does', () => {
    expect(sseFrame({ a: 1 })).toBe('data: {"a":1}\r\n\r\n');
    const error = new GatewayError({ status: 502, type: 'upstream_error', code: null, message: 'broke' });
    expect(errorEvent(error)).toEqual({ error: { code: 502, message: 'broke', status: 'UNAVAILABLE' } });
  });
});

describe('errors', () => {
  it("uses Google's status names", () => {
    const names = Object.fromEntries([400, 401, 403, 404, 429, 500, 503, 504, 418, 599].map((status) => [status, googleStatusName(status)]));
    expect(names).toEqual({
      400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED',
      500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED', 418: 'INVALID_ARGUMENT', 599: 'INTERNAL',
    });
    expect(googleErrorBody(new GatewayError({ status: 429, type: 'rate_limit_error', code: 'x', message: 'slow down' }))).toEqual({
      error: { code: 429, message: 'slow down', status: 'RESOURCE_EXHAUSTED' },
    });
  });
});

describe('embeddings', () => {
  it('reads embedContent and batchEmbedContents bodies into one canonical request', () => {
    const single = readEmbedRequests({ content: { parts: [{ text: 'a' }, { text: 'b' }] }, outputDimensionality: 8, taskType: 'RETRIEVAL_QUERY' }, false);
    expect(canonicalEmbeddingsRequest(single, 'gemini/text-embedding-004', true)).toEqual({
      model: 'gemini/text-embedding-004', input: ['a\nb'], encoding_format: 'float', dimensions: 8, task_type: 'RETRIEVAL_QUERY',
    });
    expect(canonicalEmbeddingsRequest(single, 'openai/text-embedding-3-small', false)).not.toHaveProperty('task_type');
    const batch = readEmbedRequests({ requests: [{ model: 'models/x', content: { parts: [{ text: 'one' }] } }, { content: { parts: [{ text: 'two' }] } }] }, true);
    expect(canonicalEmbeddingsRequest(batch, 'gemini/x', true)).toEqual({ model: 'gemini/x', input: ['one', 'two'], encoding_format: 'float' });
    const mixed = readEmbedRequests({ requests: [{ content: { parts: [{ text: 'a' }] }, outputDimensionality: 4 }, { content: { parts: [{ text: 'b' }] }, outputDimensionality: 8 }] }, true);
    badRequest(() => canonicalEmbeddingsRequest(mixed, 'gemini/x', true));
    badRequest(() => readEmbedRequests({ requests: [] }, true));
    badRequest(() => readEmbedRequests({ content: { parts: [{ inlineData: { mimeType: 'image/png', data: 'x' } }] } }, false));
    badRequest(() => readEmbedRequests({ content: { parts: [{ text: '' }] } }, false));
  });

  it('renders the canonical answer in both shapes, in index order, decoding base64', () => {
    const floats = Buffer.alloc(8);
    floats.writeFloatLE(0.5, 0);
    floats.writeFloatLE(-1, 4);
    const response = {
      object: 'list' as const,
      model: 'm',
      usage: { prompt_tokens: 1, total_tokens: 1 },
      data: [
        { object: 'embedding' as const, index: 1, embedding: floats.toString('base64') },
        { object: 'embedding' as const, index: 0, embedding: [0.25, 0.75] },
      ],
    };
    expect(geminiEmbeddingsResponse(response, true)).toEqual({ embeddings: [{ values: [0.25, 0.75] }, { values: [0.5, -1] }], usageMetadata: { promptTokenCount: 1 } });
    expect(geminiEmbeddingsResponse(response, false)).toEqual({ embedding: { values: [0.25, 0.75] }, usageMetadata: { promptTokenCount: 1 } });
  });
});

describe('countTokens', () => {
  it('estimates with the gateway tokenizer, from contents or a whole generateContentRequest', () => {
    const contents = [user('how many tokens is this')];
    const expected = countPromptTokens([{ role: 'user', content: 'how many tokens is this' }]);
    expect(estimateGeminiTokens({ contents })).toBe(expected);
    const withSystem = estimateGeminiTokens({ generateContentRequest: { model: 'models/x', contents, systemInstruction: { parts: [{ text: 'be brief' }] } } });
    expect(withSystem).toBeGreaterThan(expected);
    badRequest(() => estimateGeminiTokens({ contents: [] }));
  });
});
