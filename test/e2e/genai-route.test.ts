import { ApiError, FunctionCallingConfigMode, GoogleGenAI, Type, type Content, type GenerateContentResponse } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { embeddingFor, startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { jsonRequest } from '../helpers/api.js';

// The official Google Gen AI SDK pointed at the gateway's /genai route by base URL alone, talking to Gemini
// models (translated to the canonical request and back out to the Gemini adapter) and to OpenAI models.

let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

/** $1 per output token, input free, so a key's spend is exact. */
const PRICES = { 'priced-gemini': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key', prices: PRICES },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
    },
  });
  ai = clientFor('client-side-key');
});

afterAll(async () => {
  await tg?.stop();
  await gemini?.close();
  await openai?.close();
});

beforeEach(() => {
  gemini.reset();
  openai.reset();
});

function clientFor(apiKey: string): GoogleGenAI {
  return new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
}

async function collect(stream: AsyncGenerator<GenerateContentResponse>): Promise<GenerateContentResponse[]> {
  const events: GenerateContentResponse[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const lookup = {
  name: 'lookup',
  description: 'Looks things up',
  parameters: { type: Type.OBJECT, properties: { query: { type: Type.STRING }, limit: { type: Type.INTEGER, nullable: true } }, required: ['query'] },
};

describe('@google/genai -> Gemini model', () => {
  it('generateContent: translates the request both ways and answers in Gemini shape', async () => {
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'hello gemini',
      config: { systemInstruction: 'be terse', maxOutputTokens: 100, temperature: 0.5, topP: 0.9, stopSequences: ['END'], seed: 7 },
    });
    expect(response.text).toBe('echo: hello gemini');
    expect(response.candidates?.[0]).toMatchObject({ finishReason: 'STOP', index: 0, content: { role: 'model', parts: [{ text: 'echo: hello gemini' }] } });
    expect(response.modelVersion).toBe('gemini-2.5-flash');
    expect(response.responseId).toMatch(/^resp\d+$/);
    const usage = response.usageMetadata;
    expect(usage?.promptTokenCount).toBeGreaterThan(0);
    expect(usage?.candidatesTokenCount).toBe(5);
    expect(usage?.totalTokenCount).toBe((usage?.promptTokenCount ?? 0) + 5);
    const call = gemini.calls[0];
    // On the API version the SDK addressed (its default for the Gemini API is v1), as Google would have been asked.
    expect(call?.path).toBe('/v1/models/gemini-2.5-flash:generateContent');
    expect(call?.headers['x-goog-api-key']).toBe('gemini-test-key');
    expect(call?.body).toEqual({
      contents: [{ role: 'user', parts: [{ text: 'hello gemini' }] }],
      // Native pass-through: the Gemini upstream gets the SDK's own body (its systemInstruction carries a role).
      systemInstruction: { parts: [{ text: 'be terse' }], role: 'user' },
      generationConfig: { maxOutputTokens: 100, temperature: 0.5, topP: 0.9, stopSequences: ['END'], seed: 7 },
    });
  });

  it('reports thoughts and cached tokens in usageMetadata, and thought parts when asked for', async () => {
    gemini.setUsage({ thoughtsTokenCount: 11, cachedContentTokenCount: 4, thoughtText: 'thinking...' });
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'think',
      config: { thinkingConfig: { thinkingBudget: 2048, includeThoughts: true } },
    });
    expect(response.candidates?.[0]?.content?.parts).toEqual([{ text: 'thinking...', thought: true }, { text: 'echo: think' }]);
    expect(response.text).toBe('echo: think');
    expect(response.usageMetadata).toMatchObject({ thoughtsTokenCount: 11, cachedContentTokenCount: 4, candidatesTokenCount: 3 });
    // The client's own budget reaches a Gemini upstream (a translation would round it to an effort level).
    expect(gemini.calls[0]?.body.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 2048, includeThoughts: true });
  });

  it('generateContentStream: streams SSE events, the last with finishReason and usage', async () => {
    const events = await collect(await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'stream it please' }));
    expect(events.length).toBeGreaterThan(1);
    expect(events.map((event) => event.text ?? '').join('')).toBe('echo: stream it please');
    const last = events.at(-1);
    expect(last?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(last?.usageMetadata?.candidatesTokenCount).toBeGreaterThan(0);
    // The upstream's own events: each carries its usageMetadata so far, as Gemini writes them.
    for (const event of events.slice(0, -1)) {
      expect(event.candidates?.[0]?.finishReason).toBeUndefined();
      expect(event.usageMetadata?.candidatesTokenCount).toBeUndefined();
      expect(event.usageMetadata?.promptTokenCount).toBe(last?.usageMetadata?.promptTokenCount);
    }
    expect(gemini.calls[0]?.path).toBe('/v1/models/gemini-2.5-flash:streamGenerateContent');
    expect(gemini.calls[0]?.query.get('alt')).toBe('sse');
  });

  it('carries a function-calling round trip', async () => {
    const first = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'use the tool to find cats',
      config: { tools: [{ functionDeclarations: [lookup] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.AUTO } } },
    });
    const calls = first.functionCalls ?? [];
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'lookup', args: { query: 'use the tool to find cats', limit: 3 } });
    expect(first.candidates?.[0]?.finishReason).toBe('STOP');
    // Gemini-format tools reach a Gemini upstream as the SDK wrote them (native pass-through).
    expect(gemini.calls[0]?.body.tools).toEqual([
      { functionDeclarations: [{ name: 'lookup', description: 'Looks things up', parameters: { type: 'OBJECT', properties: { query: { type: 'STRING' }, limit: { type: 'INTEGER', nullable: true } }, required: ['query'] } }] },
    ]);
    expect(gemini.calls[0]?.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'AUTO' } });

    const modelTurn = first.candidates?.[0]?.content as Content;
    // The client answers without an id, as most Gemini code does: the gateway matches the response by name.
    const second = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: [
        { role: 'user', parts: [{ text: 'use the tool to find cats' }] },
        modelTurn,
        { role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { hits: 2 } } }] },
      ],
      config: { tools: [{ functionDeclarations: [lookup] }] },
    });
    expect(second.text).toBe('result: {"hits":2}');
    const replayed = gemini.calls[1]?.body.contents;
    expect(replayed[1].parts[0]).toMatchObject({ functionCall: { name: 'lookup', args: { query: 'use the tool to find cats', limit: 3 } } });
    // The thought signature Gemini gave the call went back to it.
    expect(replayed[1].parts[0].thoughtSignature).toBe('c2lnbmF0dXJlLW9mLXRoZS1jYWxs');
    expect(replayed[2]).toEqual({ role: 'user', parts: [{ functionResponse: { name: 'lookup', response: { hits: 2 } } }] });
  });

  it('streams a forced function call whole', async () => {
    const events = await collect(
      await ai.models.generateContentStream({
        model: 'gemini-2.5-flash',
        contents: 'call it',
        config: { tools: [{ functionDeclarations: [lookup] }], toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ['lookup'] } } },
      }),
    );
    const calls = events.flatMap((event) => event.functionCalls ?? []);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'lookup', args: { query: 'call it', limit: 3 } });
    expect(gemini.calls[0]?.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['lookup'] } });
  });

  it('embedContent: batchEmbedContents through the canonical embeddings request', async () => {
    const response = await ai.models.embedContent({ model: 'text-embedding-004', contents: ['first text', 'second text'], config: { outputDimensionality: 16 } });
    expect(response.embeddings).toHaveLength(2);
    expect(response.embeddings?.[0]?.values).toEqual(embeddingFor('first text', 768, 16));
    expect(response.embeddings?.[1]?.values).toEqual(embeddingFor('second text', 768, 16));
    const call = gemini.calls[0];
    expect(call?.path).toBe('/v1beta/models/text-embedding-004:batchEmbedContents');
    expect(call?.body.requests).toHaveLength(2);
    expect(call?.body.requests[0]).toMatchObject({ model: 'models/text-embedding-004', content: { parts: [{ text: 'first text' }] }, outputDimensionality: 16 });
  });

  it('sends a document title along with RETRIEVAL_DOCUMENT, one per request of a batch', async () => {
    // https://ai.google.dev/api/embeddings#EmbedContentRequest: "title ... Only applicable when TaskType is RETRIEVAL_DOCUMENT".
    await ai.models.embedContent({ model: 'text-embedding-004', contents: ['doc one', 'doc two'], config: { taskType: 'RETRIEVAL_DOCUMENT', title: 'Shared title' } });
    expect(gemini.calls[0]?.body.requests).toEqual([
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'doc one' }] }, taskType: 'RETRIEVAL_DOCUMENT', title: 'Shared title' },
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'doc two' }] }, taskType: 'RETRIEVAL_DOCUMENT', title: 'Shared title' },
    ]);
    const res = await fetch(`${tg.url}/genai/v1beta/models/text-embedding-004:batchEmbedContents?key=client-side-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        requests: [
          { model: 'models/text-embedding-004', content: { parts: [{ text: 'first doc' }] }, taskType: 'RETRIEVAL_DOCUMENT', title: 'First' },
          { model: 'models/text-embedding-004', content: { parts: [{ text: 'untitled doc' }] }, taskType: 'RETRIEVAL_DOCUMENT' },
          { model: 'models/text-embedding-004', content: { parts: [{ text: 'second doc' }] }, taskType: 'RETRIEVAL_DOCUMENT', title: 'Second' },
        ],
      }),
    });
    expect(res.status).toBe(200);
    expect(gemini.calls[1]?.body.requests.map((request: { title?: string }) => request.title)).toEqual(['First', undefined, 'Second']);
    // A title Gemini would refuse is refused in Google's shape.
    const bad = await fetch(`${tg.url}/genai/v1beta/models/text-embedding-004:embedContent?key=client-side-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: { parts: [{ text: 'x' }] }, title: 7 }),
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
    expect(gemini.calls).toHaveLength(2);
  });

  it('serves the single embedContent method too', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/text-embedding-004:embedContent?key=client-side-key`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ content: { parts: [{ text: 'lonely text' }] }, outputDimensionality: 8, taskType: 'RETRIEVAL_QUERY' }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ embedding: { values: embeddingFor('lonely text', 768, 8) }, usageMetadata: { promptTokenCount: expect.any(Number) } });
    expect(gemini.calls[0]?.body.requests[0]).toMatchObject({ taskType: 'RETRIEVAL_QUERY', outputDimensionality: 8 });
  });

  it('countTokens: an estimate, with no upstream call', async () => {
    const counted = await ai.models.countTokens({ model: 'gemini-2.5-flash', contents: 'how many tokens is this' });
    expect(counted.totalTokens).toBeGreaterThan(5);
    expect(counted.totalTokens).toBeLessThan(20);
    expect(gemini.calls).toHaveLength(0);
  });

  it("raises the SDK's ApiError with status 429 for a scripted quota error", async () => {
    gemini.enqueue({ kind: 'error', status: 429, retryDelay: '7s' });
    const error = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(429);
    const body = JSON.parse((error as ApiError).message) as { error: { code: number; status: string; message: string } };
    expect(body.error.code).toBe(429);
    expect(body.error.status).toBe('RESOURCE_EXHAUSTED');
    expect(body.error.message).toContain('quota');
  });

  it('ends a stream that fails midway with an error event, which the SDK raises', async () => {
    gemini.enqueue({ kind: 'stream-error', chunks: 1 });
    const seen: GenerateContentResponse[] = [];
    const run = async (): Promise<void> => {
      for await (const event of await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'fail midway please' })) seen.push(event);
    };
    const error = await run().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApiError);
    // The upstream's own error event (500 INTERNAL) reaches the client as sent, as an error answer would.
    expect((error as ApiError).status).toBe(500);
    expect(seen.length).toBeGreaterThan(0);
  });

  it('answers unknown methods and bad bodies in Google error shape', async () => {
    const unknown = await fetch(`${tg.url}/genai/v1beta/models/gemini-2.5-flash:predict`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { status: string } }).error.status).toBe('NOT_FOUND');
    // The SDK refuses empty contents itself, so the request is written by hand.
    const empty = await fetch(`${tg.url}/genai/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"contents":[]}' });
    expect(empty.status).toBe(400);
    const message = '* GenerateContentRequest.contents: contents is not specified';
    const details = [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'contents', description: message }] }];
    expect(await empty.json()).toEqual({ error: { code: 400, status: 'INVALID_ARGUMENT', message, details } });
    const broken = await fetch(`${tg.url}/genai/v1beta/models/gemini-2.5-flash:generateContent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"contents":' });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
    expect(gemini.calls).toHaveLength(0);
  });
});

describe('@google/genai -> OpenAI model (crossover)', () => {
  it('generateContent against openai/gpt-4o-mini', async () => {
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'hello gpt', config: { systemInstruction: 'be brief', maxOutputTokens: 50 } });
    expect(response.text).toBe('echo: hello gpt');
    expect(response.candidates?.[0]?.finishReason).toBe('STOP');
    expect(response.modelVersion).toBe('openai/gpt-4o-mini');
    expect(response.usageMetadata?.candidatesTokenCount).toBe(3);
    expect(openai.calls.at(-1)?.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello gpt' },
      ],
      max_completion_tokens: 50,
    });
  });

  it('gives an OpenAI model a text/plain inline part as text, Chat Completions taking only PDFs as files', async () => {
    const notes = Buffer.from('The launch moved to May.').toString('base64');
    const response = await ai.models.generateContent({
      model: 'openai/gpt-4o-mini',
      contents: [{ role: 'user', parts: [{ inlineData: { mimeType: 'text/plain', data: notes } }, { text: 'When is the launch?' }] }],
    });
    expect(response.text).toBe('echo: The launch moved to May. When is the launch?');
    expect(openai.calls.at(-1)?.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'The launch moved to May.' }, { type: 'text', text: 'When is the launch?' }] },
    ]);
  });

  it('refuses a fileData part OpenAI cannot open (a Gemini Files API upload, a Cloud Storage object, a PDF) instead of sending it as an image URL', async () => {
    // A Files API URI (https://ai.google.dev/gemini-api/docs/files) is readable only with the uploader's Gemini key,
    // gs:// only by Google, and OpenAI's image_url takes images alone.
    const refused = [
      { fileUri: 'https://generativelanguage.googleapis.com/v1beta/files/abc123', mimeType: 'image/png' },
      { fileUri: 'gs://bucket/cat.jpg', mimeType: 'image/jpeg' },
      { fileUri: 'https://example.com/report.pdf', mimeType: 'application/pdf' },
      { fileUri: 'https://www.youtube.com/watch?v=9hE5-98ZeCg', mimeType: 'video/*' },
    ];
    for (const fileData of refused) {
      const error = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: [{ role: 'user', parts: [{ text: 'look' }, { fileData }] }] }).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
      expect(JSON.parse((error as ApiError).message).error.message).toMatch(/contents\[0\]\.parts\[1\].*fileData.*cannot be translated/);
    }
    expect(openai.calls).toHaveLength(0);
    // An image on the web is one OpenAI fetches itself.
    const image = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: [{ role: 'user', parts: [{ text: 'look' }, { fileData: { fileUri: 'https://example.com/cat.jpg', mimeType: 'image/jpeg' } }] }] });
    expect(image.text).toBeDefined();
    expect(openai.calls[0]?.body.messages[0].content[1]).toEqual({ type: 'image_url', image_url: { url: 'https://example.com/cat.jpg' } });
  });

  it('reaches an OpenAI reasoning model: maxOutputTokens travels as max_completion_tokens', async () => {
    // OpenAI's o-series and gpt-5 refuse the deprecated max_tokens.
    const response = await ai.models.generateContent({ model: 'openai/gpt-5-mini', contents: 'hello reasoner', config: { maxOutputTokens: 500 } });
    expect(response.text).toBe('echo: hello reasoner');
    expect(openai.calls.at(-1)?.body).toMatchObject({ model: 'gpt-5-mini', max_completion_tokens: 500 });
    expect(openai.calls.at(-1)?.body).not.toHaveProperty('max_tokens');
  });

  it('passes on a structured-output refusal, whole and streamed, as the answer text', async () => {
    // OpenAI answers a refused structured output in `message.refusal` / `delta.refusal`, with no content.
    const refusal = "I'm sorry, I can't help with that.";
    const config = { responseMimeType: 'application/json', responseSchema: { type: Type.OBJECT, properties: { plan: { type: Type.STRING } } } };
    const whole = { id: 'chatcmpl-r1', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: null, refusal }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'plan something bad', config });
    expect(response.text).toBe(refusal);

    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-r2', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const body = [chunk({ role: 'assistant', content: null, refusal: '' }), chunk({ refusal: "I'm sorry, " }), chunk({ refusal: "I can't help with that." }), chunk({}, 'stop'), 'data: [DONE]\n\n'].join('');
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const events = await collect(await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'plan something bad', config }));
    expect(events.map((event) => event.text ?? '').join('')).toBe(refusal);
  });

  it('names a streamed function call once when the provider repeats the name in every delta, as the whole answer does', async () => {
    // Fireworks (Kimi) and NVIDIA NIM (MiniMax) send the whole function name again in each tool_calls delta
    // (NousResearch/hermes-agent#8089, #8259); OpenAI's SDK takes the name as given, never appends it.
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-rn', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const body = [
      chunk({ role: 'assistant', content: null }),
      chunk({ tool_calls: [{ index: 0, id: 'call_rn', type: 'function', function: { name: 'lookup', arguments: '' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'lookup', arguments: '{"query":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { name: 'lookup', arguments: '"dogs"}' } }] }),
      chunk({}, 'tool_calls'),
      'data: [DONE]\n\n',
    ].join('');
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const request = { model: 'openai/gpt-4o-mini', contents: 'find dogs', config: { tools: [{ functionDeclarations: [lookup] }] } };
    const streamed = (await collect(await ai.models.generateContentStream(request))).flatMap((event) => event.functionCalls ?? []);
    expect(streamed).toEqual([{ id: 'call_rn', name: 'lookup', args: { query: 'dogs' } }]);
    const whole = {
      id: 'chatcmpl-rn', object: 'chat.completion', created: 1, model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'call_rn', type: 'function', function: { name: 'lookup', arguments: '{"query":"dogs"}' } }] }, finish_reason: 'tool_calls', logprobs: null }],
    };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    expect((await ai.models.generateContent(request)).functionCalls).toEqual(streamed);
  });

  it('maps a length cut to MAX_TOKENS', async () => {
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'one two three four', config: { maxOutputTokens: 2 } });
    expect(response.candidates?.[0]?.finishReason).toBe('MAX_TOKENS');
    expect(response.text).toBe('echo: one');
  });

  it('accepts the model URL-encoded in the path', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'encoded' }] }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { candidates: Array<{ content: { parts: Array<{ text: string }> } }>; modelVersion: string };
    expect(body.candidates[0]?.content.parts[0]?.text).toBe('echo: encoded');
    expect(body.modelVersion).toBe('openai/gpt-4o-mini');
  });

  it('streams from openai/gpt-4o-mini, asking the upstream for usage', async () => {
    const events = await collect(await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'stream from gpt' }));
    expect(events.map((event) => event.text ?? '').join('')).toBe('echo: stream from gpt');
    expect(events.at(-1)?.candidates?.[0]?.finishReason).toBe('STOP');
    expect(events.at(-1)?.usageMetadata?.candidatesTokenCount).toBe(4);
    expect(openai.calls.at(-1)?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('round-trips a function call with an OpenAI model, streamed call arguments arriving whole', async () => {
    const events = await collect(
      await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'find dogs', config: { tools: [{ functionDeclarations: [lookup] }] } }),
    );
    const calls = events.flatMap((event) => event.functionCalls ?? []);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'lookup', args: { query: 'find dogs' } });
    const id = calls[0]?.id;
    expect(id).toMatch(/^call_/);
    expect(openai.calls.at(-1)?.body.tools).toEqual([
      { type: 'function', function: { name: 'lookup', description: 'Looks things up', parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: ['integer', 'null'] } }, required: ['query'] } } },
    ]);

    const second = await ai.models.generateContent({
      model: 'openai/gpt-4o-mini',
      contents: [
        { role: 'user', parts: [{ text: 'find dogs' }] },
        { role: 'model', parts: [{ functionCall: { id, name: 'lookup', args: { query: 'find dogs' } } }] },
        { role: 'user', parts: [{ functionResponse: { id, name: 'lookup', response: { hits: 5 } } }] },
      ],
      config: { tools: [{ functionDeclarations: [lookup] }] },
    });
    expect(second.text).toBe('echo: {"hits":5}');
    expect(openai.calls.at(-1)?.body.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'lookup', arguments: '{"query":"find dogs"}' } }] },
      { role: 'tool', tool_call_id: id, content: '{"hits":5}' },
    ]);
  });

  it('embeds with an OpenAI embedding model', async () => {
    const response = await ai.models.embedContent({ model: 'openai/text-embedding-3-small', contents: 'embed me', config: { outputDimensionality: 12 } });
    expect(response.embeddings).toHaveLength(1);
    expect(response.embeddings?.[0]?.values).toHaveLength(12);
    expect(openai.calls.at(-1)?.body).toMatchObject({ model: 'text-embedding-3-small', input: ['embed me'], dimensions: 12, encoding_format: 'float' });
  });
});

describe('virtual keys on /genai', () => {
  function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
    return jsonRequest(tg.url, method, path, body);
  }

  it('charges a virtual key sent as the SDK apiKey, and never forwards it', async () => {
    const created = await api('POST', '/api/keys', { name: 'genai-client', budget: 100, models: ['gemini/*'] });
    expect(created.status).toBe(201);
    const { id, key } = created.body as { id: string; key: string };
    const response = await clientFor(key).models.generateContent({ model: 'priced-gemini', contents: 'hi', config: { maxOutputTokens: 10 } });
    expect(response.text).toBe('echo: hi');
    expect(gemini.calls[0]?.headers['x-goog-api-key']).toBe('gemini-test-key');
    expect(JSON.stringify(gemini.calls[0]?.headers)).not.toContain(key);
    const record = await api('GET', `/api/keys/${id}`);
    // "echo: hi" is 2 output tokens at $1 each.
    expect(record.body).toMatchObject({ id, requests: 1, spend: 2 });
  });

  it('refuses an unknown tg- key with UNAUTHENTICATED and a model the key may not use with PERMISSION_DENIED', async () => {
    const unknown = await clientFor('tg-not-a-real-key-at-all').models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }).catch((err: unknown) => err);
    expect(unknown).toBeInstanceOf(ApiError);
    expect((unknown as ApiError).status).toBe(401);
    expect((unknown as ApiError).message).toContain('UNAUTHENTICATED');
    const created = await api('POST', '/api/keys', { name: 'gemini-only', models: ['gemini/*'] });
    const denied = await clientFor(created.body.key as string).models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'hi' }).catch((err: unknown) => err);
    expect((denied as ApiError).status).toBe(403);
    expect((denied as ApiError).message).toContain('PERMISSION_DENIED');
    expect(openai.calls).toHaveLength(0);
  });
});

describe('@google/genai models', () => {
  it('lists models page by page (Gemini by bare names, others as <provider>/<model>) and gets one', async () => {
    const names: string[] = [];
    const pager = await ai.models.list({ config: { pageSize: 100 } });
    for await (const model of pager) names.push(model.name ?? '');
    expect(names.length).toBeGreaterThan(1_000);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toContain('models/gemini-2.5-flash');
    expect(names).toContain('models/openai/gpt-4o');
    const one = await ai.models.get({ model: 'gemini-2.5-flash' });
    expect(one.name).toBe('models/gemini-2.5-flash');
    const missing = await ai.models.get({ model: 'no-such-model' }).catch((err: unknown) => err);
    expect(missing).toBeInstanceOf(ApiError);
    expect((missing as ApiError).status).toBe(404);
  });

  it('says which models embed: embedContent for them, generateContent for the others, as Gemini lists them', async () => {
    // Clients pick embedding models from the list by `supportedGenerationMethods` (the SDK's `supportedActions`).
    const embedding = await ai.models.get({ model: 'gemini-embedding-001' });
    expect(embedding.supportedActions).toContain('embedContent');
    expect(embedding.supportedActions).not.toContain('generateContent');
    const chat = await ai.models.get({ model: 'gemini-2.5-flash' });
    expect(chat.supportedActions).toContain('generateContent');
    expect(chat.supportedActions).not.toContain('embedContent');
    const embedders: string[] = [];
    for await (const model of await ai.models.list({ config: { pageSize: 1000 } })) {
      if (model.supportedActions?.includes('embedContent')) embedders.push(model.name ?? '');
    }
    expect(embedders).toContain('models/gemini-embedding-001');
    expect(embedders).toContain('models/openai/text-embedding-3-small');
    expect(embedders).not.toContain('models/gemini-2.5-flash');
  });
});
