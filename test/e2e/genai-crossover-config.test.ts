import { GoogleGenAI, Type } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Generation settings of a /genai request reaching a provider of another format (OpenAI), with the official
// @google/genai SDK: what Google's API reads must not be silently dropped on the way.

let openai: ScriptedUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' } },
  });
  ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
});

afterAll(async () => {
  await tg?.stop();
  await openai?.close();
});

beforeEach(() => openai.reset());

describe('/genai generation settings -> OpenAI model', () => {
  it('reads candidateCount written as a string, as protobuf JSON allows, like the other numbers', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'two please' }] }], generationConfig: { candidateCount: '2', maxOutputTokens: '40' } }),
    });
    expect(res.status).toBe(200);
    expect(openai.calls.at(-1)?.body).toMatchObject({ n: 2, max_completion_tokens: 40 });
  });

  it('refuses a candidateCount that is not a number, in Google error shape', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { candidateCount: 'two' } }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
    expect(openai.calls).toHaveLength(0);
  });

  it('asks for log probabilities (responseLogprobs, logprobs) and gives them back as logprobsResult and avgLogprobs', async () => {
    const logprobs = {
      content: [
        { token: 'Hi', logprob: -0.5, bytes: [72, 105], top_logprobs: [{ token: 'Hi', logprob: -0.5, bytes: [72, 105] }, { token: 'Hello', logprob: -1.5, bytes: [72, 101, 108, 108, 111] }] },
        { token: '!', logprob: -0.25, bytes: [33], top_logprobs: [{ token: '!', logprob: -0.25, bytes: [33] }] },
      ],
      refusal: null,
    };
    const whole = { id: 'chatcmpl-lp', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: 'Hi!' }, finish_reason: 'stop', logprobs }], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'greet', config: { responseLogprobs: true, logprobs: 2 } });
    expect(openai.calls.at(-1)?.body).toMatchObject({ logprobs: true, top_logprobs: 2 });
    const candidate = response.candidates?.[0];
    expect(candidate?.avgLogprobs).toBeCloseTo(-0.375);
    expect(candidate?.logprobsResult).toEqual({
      chosenCandidates: [
        { token: 'Hi', logProbability: -0.5 },
        { token: '!', logProbability: -0.25 },
      ],
      topCandidates: [
        { candidates: [{ token: 'Hi', logProbability: -0.5 }, { token: 'Hello', logProbability: -1.5 }] },
        { candidates: [{ token: '!', logProbability: -0.25 }] },
      ],
      logProbabilitySum: -0.75,
    });
  });

  it('gives streamed log probabilities back on each event, as Gemini streams them', async () => {
    const step = (token: string, logprob: number) => ({ content: [{ token, logprob, bytes: [...Buffer.from(token)], top_logprobs: [{ token, logprob, bytes: [...Buffer.from(token)] }] }], refusal: null });
    const event = (delta: object, logprobs: object | null, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-lps', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs }] })}\n\n`;
    const usage = `data: ${JSON.stringify({ id: 'chatcmpl-lps', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } })}\n\n`;
    const body = event({ role: 'assistant', content: 'Hi' }, step('Hi', -0.5), null) + event({ content: '!' }, step('!', -0.25), null) + event({}, null, 'stop') + usage + 'data: [DONE]\n\n';
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const events = [];
    for await (const chunk of await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'greet', config: { responseLogprobs: true, logprobs: 1 } })) events.push(chunk);
    expect(openai.calls.at(-1)?.body).toMatchObject({ logprobs: true, top_logprobs: 1 });
    // The finishing event carries an empty text, as Gemini's does: the events with text are the two tokens'.
    const texts = events.filter((chunk) => chunk.candidates?.[0]?.content?.parts?.some((part) => part.text));
    expect(texts.map((chunk) => chunk.candidates?.[0]?.logprobsResult?.chosenCandidates)).toEqual([[{ token: 'Hi', logProbability: -0.5 }], [{ token: '!', logProbability: -0.25 }]]);
    expect(texts[1]?.candidates?.[0]?.avgLogprobs).toBe(-0.25);
  });

  it('asks a model of another format for an answer whose responseSchema root is not an object (an array), and gives that back', async () => {
    // Google's own structured-output example is a list of recipes; OpenAI takes only an object at the root, so the
    // gateway asks for the list as an object's one property and takes it out again.
    const responseSchema = { type: Type.ARRAY, items: { type: Type.OBJECT, properties: { recipeName: { type: Type.STRING } }, required: ['recipeName'] } };
    const config = { responseMimeType: 'application/json', responseSchema };
    const recipes = [{ recipeName: 'Chocolate chip cookies' }, { recipeName: 'Oatmeal cookies' }];
    const wrapped = JSON.stringify({ value: recipes });
    const whole = { id: 'chatcmpl-arr', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: wrapped }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 3, completion_tokens: 9, total_tokens: 12 } };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'list cookie recipes', config });
    expect(openai.calls.at(-1)?.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: { type: 'object', properties: { value: { type: 'array', items: { type: 'object', properties: { recipeName: { type: 'string' } }, required: ['recipeName'] } } }, required: ['value'], additionalProperties: false } },
    });
    expect(JSON.parse(response.text ?? '')).toEqual(recipes);

    const chunk = (delta: object, finish: string | null) => `data: ${JSON.stringify({ id: 'chatcmpl-arrs', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
    const body = chunk({ role: 'assistant', content: wrapped.slice(0, 10) }, null) + chunk({ content: wrapped.slice(10) }, null) + chunk({}, 'stop') + 'data: [DONE]\n\n';
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const events = [];
    for await (const event of await ai.models.generateContentStream({ model: 'openai/gpt-4o-mini', contents: 'list cookie recipes', config })) events.push(event);
    expect(JSON.parse(events.map((event) => event.text ?? '').join(''))).toEqual(recipes);
    expect(events.at(-1)?.candidates?.[0]?.finishReason).toBe('STOP');
  });

  it('answers an enum request (text/x.enum with a responseSchema) from a model of another format with the bare value, as Gemini does', async () => {
    const config = { responseMimeType: 'text/x.enum', responseSchema: { type: Type.STRING, enum: ['Percussion', 'String', 'Woodwind'] } };
    const whole = { id: 'chatcmpl-enum', object: 'chat.completion', created: 1, model: 'gpt-4o-mini', choices: [{ index: 0, message: { role: 'assistant', content: '{"value":"Woodwind"}' }, finish_reason: 'stop', logprobs: null }], usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 } };
    openai.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(whole) });
    const response = await ai.models.generateContent({ model: 'openai/gpt-4o-mini', contents: 'What type of instrument is an oboe?', config });
    expect(openai.calls.at(-1)?.body.response_format.json_schema.schema).toEqual({ type: 'object', properties: { value: { type: 'string', enum: ['Percussion', 'String', 'Woodwind'] } }, required: ['value'], additionalProperties: false });
    expect(response.text).toBe('Woodwind');
  });

  it("gives a model of another format the SDK's int64 schema bounds (minItems: '1', maxLength: '20') as the integers JSON Schema takes", async () => {
    // @google/genai types Schema's minItems, maxItems, minLength, maxLength, minProperties and maxProperties as
    // strings (int64 in protobuf JSON); JSON Schema, and so OpenAI and Anthropic, wants integers there.
    const parameters = { type: Type.OBJECT, properties: { tags: { type: Type.ARRAY, items: { type: Type.STRING, maxLength: '20' }, minItems: '1', maxItems: '5' } }, minProperties: '1', required: ['tags'] };
    const responseSchema = { type: Type.OBJECT, properties: { title: { type: Type.STRING, minLength: '3' } }, maxProperties: '2' };
    await ai.models.generateContent({
      model: 'openai/gpt-4o-mini',
      contents: 'tag this',
      config: { tools: [{ functionDeclarations: [{ name: 'tag', parameters }] }], responseMimeType: 'application/json', responseSchema },
    });
    const body = openai.calls.at(-1)?.body;
    expect(body.tools[0].function.parameters).toEqual({ type: 'object', properties: { tags: { type: 'array', items: { type: 'string', maxLength: 20 }, minItems: 1, maxItems: 5 } }, minProperties: 1, required: ['tags'] });
    expect(body.response_format.json_schema.schema).toEqual({ type: 'object', properties: { title: { type: 'string', minLength: 3 } }, maxProperties: 2 });
  });
});
