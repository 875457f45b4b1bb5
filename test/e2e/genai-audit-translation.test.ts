import { ApiError, GoogleGenAI, Modality, type Content } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// The Google Gen AI SDK on /genai, translated to providers of other formats (Anthropic, OpenAI): fields with a
// counterpart are carried, those without one are refused in Google's shape rather than silently lost.

let anthropic: AnthropicUpstream;
let openai: ScriptedUpstream;
let gemini: GeminiUpstream;
let tg: RunningGateway;
let ai: GoogleGenAI;

beforeAll(async () => {
  anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai-upstream' });
  gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      anthropic: { base_url: `${anthropic.url}/v1`, api_key: 'sk-ant-upstream' },
      openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai-upstream' },
      gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' },
    },
  });
  ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
});

afterAll(async () => {
  await tg?.stop();
  await anthropic?.close();
  await openai?.close();
  await gemini?.close();
});

beforeEach(() => {
  anthropic.reset();
  openai.reset();
  gemini.reset();
  anthropic.setMode({ kind: 'ok' });
});

async function apiErrorOf(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

/** The Google error body of an ApiError (its message is the body's JSON). */
function googleError(error: ApiError): { code: number; message: string; status: string } {
  return (JSON.parse(error.message) as { error: { code: number; message: string; status: string } }).error;
}

describe('generationConfig.topK', () => {
  it('reaches an Anthropic model as top_k, whole and streamed, and not an OpenAI model, which refuses the field', async () => {
    const response = await ai.models.generateContent({ model: 'anthropic/claude-sonnet-4-5', contents: 'hello', config: { topK: 7, maxOutputTokens: 50 } });
    expect(response.text).toBe('echo: hello');
    expect(anthropic.calls.at(-1)?.body.top_k).toBe(7);
    for await (const _ of await ai.models.generateContentStream({ model: 'anthropic/claude-sonnet-4-5', contents: 'hello', config: { topK: 3, maxOutputTokens: 50 } })) void _;
    expect(anthropic.calls.at(-1)?.body.top_k).toBe(3);
    const translated = await ai.models.generateContent({ model: 'openai/gpt-4o', contents: 'hello', config: { topK: 7 } });
    expect(translated.text).toBe('echo: hello');
    expect(openai.calls.at(-1)?.body).not.toHaveProperty('top_k');
  });

  it('is read as protobuf JSON reads an int32: a numeric string is its number', async () => {
    const res = await fetch(`${tg.url}/genai/v1beta/models/anthropic%2Fclaude-sonnet-4-5:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }], generationConfig: { topK: '40' } }),
    });
    expect(res.status).toBe(200);
    expect(anthropic.calls.at(-1)?.body.top_k).toBe(40);
  });

  it('that is no count of tokens is a 400 INVALID_ARGUMENT before any upstream call', async () => {
    for (const topK of [2.5, -1, 'many']) {
      const res = await fetch(`${tg.url}/genai/v1beta/models/anthropic%2Fclaude-sonnet-4-5:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': 'client-side-key' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hello' }] }], generationConfig: { topK } }),
      });
      expect(res.status).toBe(400);
      const body = (await res.json()) as { error: { status: string; message: string } };
      expect(body.error.status).toBe('INVALID_ARGUMENT');
      expect(body.error.message).toMatch(/generation_config\.top_?k/i);
    }
    expect(anthropic.calls).toHaveLength(0);
  });
});

// A 1x1 PNG, as a function (a screenshot tool, say) returns it.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

/** A turn that calls `screenshot`, and the user turn answering it with an image in the function response's parts. */
const SCREENSHOT_TURNS: Content[] = [
  { role: 'user', parts: [{ text: 'what is on my screen?' }] },
  { role: 'model', parts: [{ functionCall: { id: 'call_shot', name: 'screenshot', args: {} } }] },
  {
    role: 'user',
    parts: [{ functionResponse: { id: 'call_shot', name: 'screenshot', response: { output: 'taken' }, parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }] } }],
  },
];

const SCREENSHOT_TOOL = { functionDeclarations: [{ name: 'screenshot', description: 'Takes a screenshot', parametersJsonSchema: { type: 'object', properties: {} } }] };

describe('functionResponse.parts (multimodal function responses)', () => {
  it('reach an OpenAI model as an image in the user message after the tool message', async () => {
    await ai.models.generateContent({ model: 'openai/gpt-4o', contents: SCREENSHOT_TURNS, config: { tools: [SCREENSHOT_TOOL] } });
    const messages = openai.calls.at(-1)?.body.messages as Array<Record<string, unknown>>;
    const tool = messages.findIndex((message) => message.role === 'tool');
    expect(messages[tool]).toMatchObject({ tool_call_id: 'call_shot', content: JSON.stringify({ output: 'taken' }) });
    expect(messages[tool + 1]).toEqual({ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] });
  });

  it('reach an Anthropic model as an image block beside the tool_result', async () => {
    await ai.models.generateContent({ model: 'anthropic/claude-sonnet-4-5', contents: SCREENSHOT_TURNS, config: { tools: [SCREENSHOT_TOOL], maxOutputTokens: 50 } });
    const messages = anthropic.calls.at(-1)?.body.messages as Array<{ role: string; content: Array<Record<string, unknown>> }>;
    const last = messages.at(-1);
    expect(last?.role).toBe('user');
    expect(last?.content.map((block) => block.type)).toEqual(['tool_result', 'image']);
    expect(last?.content[1]).toMatchObject({ source: { type: 'base64', media_type: 'image/png', data: PNG } });
  });

  it('of a kind that has no counterpart is refused in Google shape, not dropped', async () => {
    const turns: Content[] = [
      ...SCREENSHOT_TURNS.slice(0, 2),
      { role: 'user', parts: [{ functionResponse: { id: 'call_shot', name: 'screenshot', response: {}, parts: [{ inlineData: { mimeType: 'image/png', data: PNG } }, { videoMetadata: {} } as never] } }] },
    ];
    const error = await apiErrorOf(ai.models.generateContent({ model: 'openai/gpt-4o', contents: turns, config: { tools: [SCREENSHOT_TOOL] } }));
    expect(error.status).toBe(400);
    expect(googleError(error)).toMatchObject({ status: 'INVALID_ARGUMENT', message: expect.stringContaining('function_response.parts[1]') });
    expect(openai.calls).toHaveLength(0);
  });
});

describe('responseModalities', () => {
  it('asking for an image from a model of another format is a 400, not a text answer; TEXT alone travels; Gemini gets them as written', async () => {
    const error = await apiErrorOf(ai.models.generateContent({ model: 'openai/gpt-4o', contents: 'draw a cat', config: { responseModalities: [Modality.TEXT, Modality.IMAGE] } }));
    expect(error.status).toBe(400);
    expect(googleError(error)).toMatchObject({ status: 'INVALID_ARGUMENT', message: expect.stringContaining('response_modalities') });
    expect(openai.calls).toHaveLength(0);
    const text = await ai.models.generateContent({ model: 'openai/gpt-4o', contents: 'hello', config: { responseModalities: [Modality.TEXT] } });
    expect(text.text).toBe('echo: hello');
    await ai.models.generateContent({ model: 'gemini-2.5-flash-image', contents: 'draw a cat', config: { responseModalities: [Modality.TEXT, Modality.IMAGE] } });
    expect(gemini.calls.at(-1)?.body.generationConfig).toEqual({ responseModalities: ['TEXT', 'IMAGE'] });
  });
});

describe('errors of an Anthropic target', () => {
  it("Anthropic's 529 overloaded_error is Google's UNAVAILABLE", async () => {
    anthropic.setMode({ kind: 'error', status: 529 });
    const error = await apiErrorOf(ai.models.generateContent({ model: 'anthropic/claude-sonnet-4-5', contents: 'hello' }));
    expect(googleError(error)).toMatchObject({ code: 529, status: 'UNAVAILABLE' });
  });
});
