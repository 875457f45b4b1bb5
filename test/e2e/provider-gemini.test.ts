import { calcPrice } from '@pydantic/genai-prices';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { countTextTokens } from '../../src/tokens/tokenizer.js';
import { embeddingFor, startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';

let upstream: GeminiUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      gemini: { base_url: `${upstream.url}/v1beta`, api_key: 'gemini-test-key' },
      geminibad: { type: 'gemini', base_url: `${upstream.url}/v1beta`, api_key: 'not-the-key' },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

const MODEL = 'gemini/gemini-2.5-flash';
const weatherTool: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'lookup',
    description: 'Looks things up',
    parameters: { type: 'object', additionalProperties: false, properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query'] },
  },
};

async function collect(stream: AsyncIterable<OpenAI.ChatCompletionChunk>): Promise<OpenAI.ChatCompletionChunk[]> {
  const chunks: OpenAI.ChatCompletionChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

interface LogRow {
  status: number;
  cost_usd: number;
  model: string;
}

/**
 * The request log is written after the response: wait for the row of the request with this id (the `x-request-id`
 * its client got). Not "the newest row": an earlier test's request may be logged after this one was answered.
 */
async function logOf(id: string): Promise<LogRow> {
  for (let i = 0; i < 100; i++) {
    const response = await fetch(`${tg.url}/api/logs/${encodeURIComponent(id)}`);
    if (response.status === 200) return (await response.json()) as LogRow;
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`request ${id} was never logged`);
}

describe('gemini provider through the gateway', () => {
  it('answers a plain request with text and usage', async () => {
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'hello gemini' },
      ],
      max_tokens: 100,
    });
    expect(completion.choices[0]?.message.content).toBe('echo: hello gemini');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.model).toBe(MODEL);
    expect(completion.usage?.prompt_tokens).toBeGreaterThan(0);
    const call = upstream.calls[0];
    expect(call?.path).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(call?.headers['x-goog-api-key']).toBe('gemini-test-key');
    expect(call?.body).toEqual({
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      contents: [{ role: 'user', parts: [{ text: 'hello gemini' }] }],
      generationConfig: { maxOutputTokens: 100 },
    });
  });

  it('streams an answer over alt=sse with usage when include_usage is set', async () => {
    upstream.setUsage({ thoughtsTokenCount: 9, thoughtText: 'pondering' });
    const chunks = await collect(
      await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'stream this please' }], stream: true, stream_options: { include_usage: true } }),
    );
    expect(upstream.calls[0]?.path).toBe('/v1beta/models/gemini-2.5-flash:streamGenerateContent');
    expect(upstream.calls[0]?.query.get('alt')).toBe('sse');
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe('echo: stream this please');
    const reasoning = chunks.map((c) => (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '').join('');
    expect(reasoning).toBe('pondering');
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('stop');
    const last = chunks[chunks.length - 1];
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ completion_tokens_details: { reasoning_tokens: 9 } });
    expect(last?.usage?.completion_tokens).toBeGreaterThan(9);
  });

  it('round-trips a tool call: functionCall out, functionResponse back in a user turn', async () => {
    const first = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'please use the tool for cats' }],
      tools: [weatherTool],
    });
    const choice = first.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const toolCall = choice?.message.tool_calls?.[0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(toolCall.id).toMatch(/^call_/);
    expect(toolCall.function.name).toBe('lookup');
    expect(JSON.parse(toolCall.function.arguments)).toEqual({ query: 'please use the tool for cats', limit: 3 });
    // Gemini rejects additionalProperties: the gateway must have dropped it.
    expect(upstream.calls[0]?.body.tools[0].functionDeclarations[0].parameters.additionalProperties).toBeUndefined();

    const second = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'user', content: 'please use the tool for cats' },
        choice!.message,
        { role: 'tool', tool_call_id: toolCall.id, content: JSON.stringify({ found: 42 }) },
      ],
      tools: [weatherTool],
    });
    expect(second.choices[0]?.message.content).toBe('result: {"found":42}');
    const contents = upstream.calls[1]?.body.contents;
    expect(contents[1]).toEqual({
      role: 'model',
      parts: [{ functionCall: { name: 'lookup', args: { query: 'please use the tool for cats', limit: 3 } }, thoughtSignature: 'c2lnbmF0dXJlLW9mLXRoZS1jYWxs' }],
    });
    expect(contents[2]).toEqual({ role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { found: 42 } } }] });
  });

  it('sends an earlier refusal as what the model said', async () => {
    // OpenAI's assistant content may hold refusal parts, and a structured-output refusal comes back as content null
    // with the words in `refusal`; a client sends either back in its history.
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot do that.' }] },
        { role: 'user', content: 'second' },
        { role: 'assistant', content: null, refusal: 'Nor that.' } as OpenAI.ChatCompletionAssistantMessageParam,
        { role: 'user', content: 'third' },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: third');
    expect(upstream.calls.at(-1)?.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'first' }] },
      { role: 'model', parts: [{ text: 'I cannot do that.' }] },
      { role: 'user', parts: [{ text: 'second' }] },
      { role: 'model', parts: [{ text: 'Nor that.' }] },
      { role: 'user', parts: [{ text: 'third' }] },
    ]);
  });

  it('answers logprobs and top_logprobs with the log probabilities Gemini returns, streamed or not', async () => {
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'two words' }], logprobs: true, top_logprobs: 2 });
    expect(upstream.calls.at(-1)?.body.generationConfig).toMatchObject({ responseLogprobs: true, logprobs: 2 });
    const content = completion.choices[0]?.logprobs?.content ?? [];
    // One entry per token of the answer ('echo: two words'), each with its top candidates, the chosen one first.
    expect(content.map((entry) => entry.token).join('')).toBe(completion.choices[0]?.message.content);
    expect(content[0]).toEqual({
      token: 'echo: ',
      logprob: -0.25,
      bytes: [...Buffer.from('echo: ')],
      top_logprobs: [
        { token: 'echo: ', logprob: -0.25, bytes: [...Buffer.from('echo: ')] },
        { token: 'alt1', logprob: -1.25, bytes: [...Buffer.from('alt1')] },
      ],
    });

    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'two words' }], logprobs: true, stream: true });
    let text = '';
    const tokens: string[] = [];
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      for (const entry of chunk.choices[0]?.logprobs?.content ?? []) {
        tokens.push(entry.token);
        expect(entry.top_logprobs).toEqual([]);
      }
    }
    expect(tokens.join('')).toBe(text);
    // Without logprobs, none are asked for and none come back.
    const plain = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] });
    expect(upstream.calls.at(-1)?.body.generationConfig?.responseLogprobs).toBeUndefined();
    expect(plain.choices[0]?.logprobs).toBeNull();
  });

  it('streams a forced tool call as a tool_calls delta', async () => {
    const chunks = await collect(
      await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'weather?' }], tools: [weatherTool], tool_choice: 'required', stream: true }),
    );
    expect(upstream.calls[0]?.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY' } });
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ index: 0, type: 'function', function: { name: 'lookup', arguments: '{"query":"weather?","limit":3}' } });
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('sends image parts in native form', async () => {
    const completion = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is in it' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==' } },
            { type: 'image_url', image_url: { url: 'https://example.com/photo.jpg' } },
          ],
        },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe('echo: what is in it [image/png] [image/jpeg]');
    expect(upstream.calls[0]?.body.contents[0].parts).toEqual([
      { text: 'what is in it' },
      { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgoAAAANSUhEUg==' } },
      { fileData: { mimeType: 'image/jpeg', fileUri: 'https://example.com/photo.jpg' } },
    ]);
  });

  it('answers a blocked prompt as an empty content_filter completion', async () => {
    upstream.enqueue({ kind: 'blocked' });
    const completion = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'something bad' }] });
    expect(completion.choices[0]).toMatchObject({ finish_reason: 'content_filter', message: { content: '' } });
  });

  it('surfaces a 400 INVALID_ARGUMENT as BadRequestError with Gemini\'s message', async () => {
    upstream.enqueue({ kind: 'error', status: 400, message: '* GenerateContentRequest.generation_config.max_output_tokens: must be positive\n' });
    const request = tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] });
    await expect(request).rejects.toBeInstanceOf(OpenAI.BadRequestError);
    await expect(request).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/^400 \* GenerateContentRequest\.generation_config\.max_output_tokens: must be positive/), code: 'INVALID_ARGUMENT' });
  });

  it('surfaces a 429 RESOURCE_EXHAUSTED as RateLimitError with retry-after from RetryInfo', async () => {
    upstream.enqueue({ kind: 'error', status: 429, retryDelay: '7s' });
    let caught: unknown;
    try {
      await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(OpenAI.RateLimitError);
    const error = caught as InstanceType<typeof OpenAI.RateLimitError>;
    expect(error.status).toBe(429);
    expect(error.message).toMatch(/^429 You exceeded your current quota/);
    expect(error.headers?.get('x-tollgate-provider')).toBe('gemini');
    expect(error.headers?.get('retry-after')).toBe('7');
  });

  it('surfaces an invalid key (400 API_KEY_INVALID upstream) as AuthenticationError 401', async () => {
    const request = tg.client.chat.completions.create({ model: 'geminibad/gemini-2.5-flash', messages: [{ role: 'user', content: 'x' }] });
    await expect(request).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(request).rejects.toMatchObject({ status: 401, message: '401 API key not valid. Please pass a valid API key.' });
    // Google's words as written; which configured provider refused the key is the header.
    const error = (await request.catch((err: unknown) => err)) as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(error.headers?.get('x-tollgate-provider')).toBe('geminibad');
    expect(upstream.calls[0]?.headers['x-goog-api-key']).toBe('not-the-key');
  });

  it('surfaces an unknown model as NotFoundError', async () => {
    const request = tg.client.chat.completions.create({ model: 'gemini/missing-model', messages: [{ role: 'user', content: 'x' }] });
    await expect(request).rejects.toBeInstanceOf(OpenAI.NotFoundError);
    await expect(request).rejects.toMatchObject({ message: expect.stringContaining('models/missing-model is not found') });
  });

  it('ends a stream with an error when Gemini fails mid-stream', async () => {
    upstream.enqueue({ kind: 'stream-error', chunks: 1 });
    const stream = await tg.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'a long answer please' }], stream: true });
    const received: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    ).rejects.toThrow(/An internal error has occurred/);
    expect(received.join('')).not.toBe('');
  });

  it('records the catalogue price for a request with cache reads and thinking', async () => {
    upstream.setUsage({ cachedContentTokenCount: 4_000, thoughtsTokenCount: 120 });
    const { data: completion, response } = await tg.client.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'price me' }] })
      .withResponse();
    const usage = completion.usage!;
    expect(usage.prompt_tokens_details?.cached_tokens).toBe(4_000);
    expect(usage.completion_tokens_details?.reasoning_tokens).toBe(120);
    const native = upstream.calls[0]!;
    expect(native.path).toContain('gemini-2.5-flash');
    const expected = calcPrice(
      { input_tokens: usage.prompt_tokens, cache_read_tokens: 4_000, output_tokens: usage.completion_tokens, output_reasoning_tokens: 120 },
      'gemini-2.5-flash',
      { providerId: 'google' },
    )?.total_price;
    expect(expected).toBeGreaterThan(0);
    const row = await logOf(response.headers.get('x-request-id') ?? '');
    expect(row.status).toBe(200);
    expect(Math.abs(row.cost_usd - (expected ?? NaN))).toBeLessThanOrEqual(1.01e-9);
  });
});

interface EmbedLogRow {
  id: string;
  model: string;
  provider: string | null;
  status: number;
  prompt_tokens: number;
}

async function newestLog(): Promise<EmbedLogRow | undefined> {
  return ((await (await fetch(`${tg.url}/api/logs?limit=1`)).json()) as { data: EmbedLogRow[] }).data[0];
}

/**
 * The newest log row for `model` written after `previous` (the log is written just after the answer, so poll
 * briefly). Matching the model keeps a late row of an earlier test from being taken for this one.
 */
async function logAfter(previous: EmbedLogRow | undefined, model: string): Promise<EmbedLogRow> {
  for (let i = 0; i < 100; i++) {
    const row = await newestLog();
    if (row && row.id !== previous?.id && row.model === model) return row;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the embeddings request was never logged');
}

/** The scripted upstream's own token count for a text (what it reports in usageMetadata). */
const upstreamTokens = (text: string): number => Math.max(1, Math.ceil(text.length / 4));

/** What Pydantic emits for a model with nested models: the nested ones in `$defs`, used through `$ref`. */
const ADDRESS = { title: 'Address', type: 'object', properties: { city: { title: 'City', type: 'string' } }, required: ['city'], additionalProperties: false };
const PERSON = {
  $defs: { Address: ADDRESS },
  title: 'Person',
  type: 'object',
  properties: {
    name: { title: 'Name', type: 'string' },
    home: { $ref: '#/$defs/Address', description: 'Where they live' },
    past: { title: 'Past', type: 'array', items: { $ref: '#/$defs/Address' } },
  },
  required: ['name', 'home'],
  additionalProperties: false,
};
/** The same in Gemini's subset: each reference replaced by the schema it names, JSON Schema-only keys left out. */
const ADDRESS_SUBSET = { title: 'Address', type: 'object', properties: { city: { title: 'City', type: 'string' } }, required: ['city'] };
const PERSON_SUBSET = {
  title: 'Person',
  type: 'object',
  properties: { name: { title: 'Name', type: 'string' }, home: { ...ADDRESS_SUBSET, description: 'Where they live' }, past: { title: 'Past', type: 'array', items: ADDRESS_SUBSET } },
  required: ['name', 'home'],
};
/** A recursive model (a tree): its reference cannot be inlined; the recursion is in a property that is not required. */
const TREE = {
  $defs: { Node: { type: 'object', properties: { label: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } }, required: ['label'] } },
  $ref: '#/$defs/Node',
};
/** As Pydantic may write it, a description beside a reference, which Gemini's JSON Schema fields do not take. */
const DESCRIBED_TREE = { ...TREE, description: 'A tree' };

describe('JSON schemas with references ($defs / $ref) to Gemini', () => {
  it('inlines the references of structured outputs and tool parameters into the subset', async () => {
    await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'who?' }],
      response_format: { type: 'json_schema', json_schema: { name: 'Person', schema: PERSON } },
    });
    const config = upstream.calls.at(-1)?.body.generationConfig;
    expect(config.responseSchema).toEqual(PERSON_SUBSET);
    expect(config).not.toHaveProperty('responseJsonSchema');
    await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'save them' }],
      tools: [{ type: 'function', function: { name: 'save', parameters: PERSON } }],
    });
    expect(upstream.calls.at(-1)?.body.tools[0].functionDeclarations[0]).toEqual({ name: 'save', parameters: PERSON_SUBSET });
  });

  it('sends a recursive schema as JSON Schema in the fields that take references', async () => {
    const answer = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'a tree' }],
      response_format: { type: 'json_schema', json_schema: { name: 'Tree', schema: DESCRIBED_TREE } },
      tools: [{ type: 'function', function: { name: 'plant', parameters: TREE } }],
      tool_choice: 'none',
    });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const body = upstream.calls.at(-1)?.body;
    expect(body.generationConfig).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: TREE });
    expect(body.generationConfig).not.toHaveProperty('responseSchema');
    expect(body.tools[0].functionDeclarations[0]).toEqual({ name: 'plant', parametersJsonSchema: TREE });
  });
});

describe('JSON schemas with values the subset cannot hold', () => {
  it('sends a schema with number or boolean enums as JSON Schema in the fields that take them', async () => {
    // What Pydantic writes for Literal[4, 6, 8] (or an MCP tool for an integer option): the subset's enum holds
    // strings only, and Gemini refuses the request ("Invalid value at '...enum[0]' (TYPE_STRING), 4").
    const schema = {
      type: 'object',
      properties: { sides: { type: 'integer', enum: [4, 6, 8] }, fair: { const: true }, name: { type: 'string', enum: ['d4', 'd6'] } },
      required: ['sides', 'fair', 'name'],
      additionalProperties: false,
    };
    const answer = await tg.client.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'a die' }],
      response_format: { type: 'json_schema', json_schema: { name: 'Die', strict: true, schema } },
      tools: [{ type: 'function', function: { name: 'roll', parameters: { type: 'object', properties: { times: { type: 'integer', enum: [1, 2, 3] } } } } }],
      tool_choice: 'none',
    });
    expect(answer.choices[0]?.message.content).toBeTruthy();
    const body = upstream.calls.at(-1)?.body;
    expect(body.generationConfig).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: schema });
    expect(body.generationConfig).not.toHaveProperty('responseSchema');
    expect(body.tools[0].functionDeclarations[0]).toEqual({ name: 'roll', parametersJsonSchema: { type: 'object', properties: { times: { type: 'integer', enum: [1, 2, 3] } } } });
  });
});

describe('gemini embeddings through the gateway', () => {
  const EMBED_MODEL = 'gemini/gemini-embedding-001';

  it('answers the official client (base64 by default) with decoded vectors in input order, and logs Gemini\'s token count', async () => {
    const previous = await newestLog();
    const input = ['first text to embed', 'second', 'the third and last text'];
    const response = await tg.client.embeddings.create({ model: EMBED_MODEL, input });
    expect(response.object).toBe('list');
    expect(response.model).toBe(EMBED_MODEL);
    expect(response.data.map((d) => d.index)).toEqual([0, 1, 2]);
    for (const [i, text] of input.entries()) {
      expect(response.data[i]?.embedding).toHaveLength(3072);
      // The client asked for base64 and decoded the float32 bytes: exactly the upstream's vectors, in order.
      expect(response.data[i]?.embedding).toEqual(embeddingFor(text, 3072));
    }
    const tokens = input.reduce((sum, text) => sum + upstreamTokens(text), 0);
    expect(response.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });

    const call = upstream.calls[0];
    expect(upstream.calls).toHaveLength(1);
    expect(call?.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(call?.headers['x-goog-api-key']).toBe('gemini-test-key');
    expect(call?.body).toEqual({ requests: input.map((text) => ({ model: 'models/gemini-embedding-001', content: { parts: [{ text }] } })) });

    const row = await logAfter(previous, EMBED_MODEL);
    expect(row).toMatchObject({ model: EMBED_MODEL, provider: 'gemini', status: 200, prompt_tokens: tokens });
  });

  it('sends dimensions as outputDimensionality and answers floats when asked', async () => {
    const response = await tg.client.embeddings.create({ model: 'gemini/text-embedding-004', input: 'short vector', dimensions: 8, encoding_format: 'float' });
    expect(response.data).toHaveLength(1);
    expect(response.data[0]?.embedding).toEqual(embeddingFor('short vector', 768, 8));
    expect(upstream.calls[0]?.path).toBe('/v1beta/models/text-embedding-004:batchEmbedContents');
    expect(upstream.calls[0]?.body.requests[0]).toEqual({ model: 'models/text-embedding-004', content: { parts: [{ text: 'short vector' }] }, outputDimensionality: 8 });
  });

  it('estimates prompt tokens with the tokenizer when Gemini reports no usage, and logs them', async () => {
    upstream.setUsage({ omitEmbeddingUsage: true });
    const previous = await newestLog();
    const input = ['no usage metadata here', 'nor here'];
    // A model of its own, so the log row found is this request's.
    const model = 'gemini/gemini-embedding-exp-03-07';
    const response = await tg.client.embeddings.create({ model, input });
    const estimate = countTextTokens(input[0]!) + countTextTokens(input[1]!);
    expect(estimate).toBeGreaterThan(0);
    expect(response.usage.prompt_tokens).toBe(estimate);
    expect(upstream.calls[0]?.path).toBe('/v1beta/models/gemini-embedding-exp-03-07:batchEmbedContents');
    const row = await logAfter(previous, model);
    expect(row).toMatchObject({ model, status: 200, prompt_tokens: estimate });
  });

  it('refuses token-array input with a 400 on input before any upstream call', async () => {
    for (const input of [[101, 102, 103], [[1, 2], [3]]]) {
      const error = await tg.client.embeddings.create({ model: EMBED_MODEL, input }).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error).toMatchObject({ status: 400, param: 'input', message: expect.stringContaining('token arrays') });
    }
    expect(upstream.calls).toHaveLength(0);
  });

  it('surfaces upstream errors as the typed OpenAI errors', async () => {
    upstream.enqueue({ kind: 'error', status: 429, retryDelay: '5s' });
    const limited = await tg.client.embeddings.create({ model: EMBED_MODEL, input: 'x' }).catch((err: unknown) => err);
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited).toMatchObject({ status: 429, message: expect.stringMatching(/^429 You exceeded your current quota/) });
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toBe('5');

    upstream.enqueue({ kind: 'error', status: 400, message: '* BatchEmbedContentsRequest.requests[0].output_dimensionality: must be positive\n' });
    const bad = await tg.client.embeddings.create({ model: EMBED_MODEL, input: 'x' }).catch((err: unknown) => err);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad).toMatchObject({ status: 400, code: 'INVALID_ARGUMENT', message: expect.stringContaining('output_dimensionality') });

    const unauthorized = await tg.client.embeddings.create({ model: 'geminibad/gemini-embedding-001', input: 'x' }).catch((err: unknown) => err);
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unauthorized).toMatchObject({ status: 401 });

    const missing = await tg.client.embeddings.create({ model: 'gemini/missing-embedder', input: 'x' }).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ message: expect.stringContaining('not supported for batchEmbedContents') });
  });

  it('is rejected by the scripted upstream when sent in OpenAI\'s shape', async () => {
    const response = await fetch(`${upstream.url}/v1beta/models/gemini-embedding-001:batchEmbedContents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'gemini-test-key' },
      body: JSON.stringify({ model: 'gemini-embedding-001', input: ['x'] }),
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { status: string; message: string } }).error).toMatchObject({ status: 'INVALID_ARGUMENT', message: expect.stringContaining('Unknown name "model"') });
  });
});

describe('the scripted Gemini upstream validates like the real API', () => {
  const post = async (body: unknown, headers: Record<string, string> = { 'x-goog-api-key': 'gemini-test-key' }, path = '/v1beta/models/gemini-2.5-flash:generateContent') => {
    const response = await fetch(`${upstream.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as { error: { code: number; status: string; message: string } } };
  };

  it('rejects an OpenAI-shaped body with Gemini\'s 400', async () => {
    const { status, body } = await post({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT', message: 'Invalid JSON payload received. Unknown name "model": Cannot find field.' });
  });

  it('checks roles, parts and the key', async () => {
    expect((await post({ contents: [{ role: 'assistant', parts: [{ text: 'x' }] }] })).body.error.message).toBe('Please use a valid role: user, model.');
    expect((await post({ contents: [{ role: 'user', parts: [] }] })).body.error.message).toContain('contents.parts must not be empty');
    expect((await post({ contents: [] })).body.error.message).toContain('contents is not specified');
    const missing = await post({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }, {});
    expect(missing).toMatchObject({ status: 403, body: { error: { status: 'PERMISSION_DENIED' } } });
    const viaQuery = await post({ contents: [{ role: 'user', parts: [{ text: 'x' }] }] }, {}, '/v1beta/models/gemini-2.5-flash:generateContent?key=gemini-test-key');
    expect(viaQuery.status).toBe(200);
  });

  it('refuses references in the OpenAPI subset and checks them in the JSON Schema fields', async () => {
    const contents = [{ role: 'user', parts: [{ text: 'x' }] }];
    const json = { responseMimeType: 'application/json' };
    const subset = await post({ contents, generationConfig: { ...json, responseSchema: { type: 'object', properties: { home: { $ref: '#/$defs/Address' } } } } });
    expect(subset.body.error.message).toBe('Invalid JSON payload received. Unknown name "$ref" at \'generation_config.response_schema.properties[home].value\': Cannot find field.');
    expect((await post({ contents, generationConfig: { ...json, responseJsonSchema: TREE } })).status).toBe(200);
    expect((await post({ contents, generationConfig: { ...json, responseJsonSchema: DESCRIBED_TREE } })).body.error.message).toContain("a schema with $ref may not set 'description'");
    expect((await post({ contents, generationConfig: { ...json, responseJsonSchema: TREE, responseSchema: { type: 'object' } } })).status).toBe(400);
    expect((await post({ contents, generationConfig: { responseJsonSchema: TREE } })).status).toBe(400);
    const requiredCycle = { ...TREE, $defs: { Node: { ...TREE.$defs.Node, required: ['label', 'children'] } } };
    expect((await post({ contents, generationConfig: { ...json, responseJsonSchema: requiredCycle } })).body.error.message).toContain("cyclic reference '#/$defs/Node'");
    expect((await post({ contents, generationConfig: { ...json, responseJsonSchema: { $ref: '#/$defs/Missing' } } })).body.error.message).toContain('cannot resolve');
  });
});
