import { ApiError, GoogleGenAI, HarmBlockThreshold, HarmCategory, type GenerateContentResponse } from '@google/genai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Native pass-through on /genai: a Gemini client talking to a Gemini provider gets its own body to the upstream and
 * the upstream's own answer back (what the canonical form cannot carry included: Google Search grounding, safety
 * settings and ratings, the exact thinking budget), but for `modelVersion`; translation stays for other formats.
 */
let gemini: GeminiUpstream;
let openai: ScriptedUpstream;
let tg: RunningGateway;
let guarded: RunningGateway;
let cached: RunningGateway;

const KEY = 'gemini-native-key';
const SEARCH = { tools: [{ googleSearch: {} }] };
const SAFETY = { safetySettings: [{ category: 'HARM_CATEGORY_HARASSMENT', threshold: 'BLOCK_ONLY_HIGH' }] };

function client(gateway: RunningGateway): GoogleGenAI {
  return new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${gateway.url}/genai`, timeout: 15_000 } });
}

/** The same request straight to the scripted upstream: what Gemini itself answers. */
async function direct(method: string, body: unknown, query = ''): Promise<string> {
  const response = await fetch(`${gemini.url}/v1beta/models/gemini-2.5-flash:${method}${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-goog-api-key': KEY },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
  return response.text();
}

async function viaGateway(method: string, body: unknown, query = '', gateway: RunningGateway = tg): Promise<Response> {
  return fetch(`${gateway.url}/genai/v1beta/models/gemini-2.5-flash:${method}${query}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function viaGatewayOn(version: string, method: string, body: unknown): Promise<Response> {
  return fetch(`${tg.url}/genai/${version}/models/gemini-2.5-flash:${method}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** Every `responseId` (a per-answer counter in the scripted upstream) replaced, to compare two answers. */
function sameIds(text: string): string {
  return text.replace(/"responseId":\s*"[^"]*"/g, '"responseId":"*"');
}

beforeAll(async () => {
  gemini = await startGeminiUpstream({ apiKey: KEY });
  openai = await startOpenAIUpstream({ apiKey: 'sk-openai' });
  const providers = {
    gemini: { base_url: `${gemini.url}/v1beta`, api_key: KEY },
    openai: { base_url: `${openai.url}/v1`, api_key: 'sk-openai' },
  };
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers,
    routes: { mixed: { targets: [{ model: 'openai/gpt-4o-mini' }], fallbacks: ['gemini/gemini-2.5-flash'] } },
  });
  guarded = await startGateway({ providers, guardrails: { rules: [{ name: 'emails', kind: 'email', action: 'redact' }] } });
  cached = await startGateway({ providers, cache: { mode: 'on', semantic: { enabled: false } } });
});

afterAll(async () => {
  await tg?.stop();
  await guarded?.stop();
  await cached?.stop();
  await gemini?.close();
  await openai?.close();
});

beforeEach(() => {
  gemini.reset();
  openai.reset();
});

describe('/genai to a Gemini provider: native pass-through', () => {
  it('sends the client body as it is, built-in tools and safety settings included, and returns the answer whole', async () => {
    const ai = client(tg);
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'what is new with cats',
      config: { ...SEARCH, safetySettings: [{ category: HarmCategory.HARM_CATEGORY_HARASSMENT, threshold: HarmBlockThreshold.BLOCK_ONLY_HIGH }], thinkingConfig: { thinkingBudget: 1234 } },
    });
    const sent = gemini.calls[0]?.body;
    expect(sent.tools).toEqual([{ googleSearch: {} }]);
    expect(sent.safetySettings).toEqual(SAFETY.safetySettings);
    expect(sent.generationConfig.thinkingConfig).toEqual({ thinkingBudget: 1234 });
    const candidate = response.candidates?.[0];
    expect(candidate?.groundingMetadata?.webSearchQueries).toEqual(['what is new with cats']);
    expect(candidate?.groundingMetadata?.groundingChunks?.[0]?.web?.title).toBe('example.com');
    expect(candidate?.groundingMetadata?.searchEntryPoint?.renderedContent).toContain('Search suggestions');
    expect(candidate?.safetyRatings).toEqual([{ category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' }]);
    expect(response.text).toBe('echo: what is new with cats');
  });

  it("answers exactly what Gemini answers, but for modelVersion (the name the client asked for)", async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'grounded please' }] }], ...SEARCH, ...SAFETY };
    const expected = JSON.parse(sameIds(await direct('generateContent', body)));
    const response = await viaGateway('generateContent', body);
    expect(response.status).toBe(200);
    expect(JSON.parse(sameIds(await response.text()))).toEqual({ ...expected, modelVersion: 'gemini-2.5-flash' });
  });

  it('streams the upstream events byte for byte in alt=sse, and as one JSON array without it', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'stream the grounded answer' }] }], ...SEARCH, ...SAFETY };
    const expected = sameIds(await direct('streamGenerateContent', body, '?alt=sse'));
    const sse = await viaGateway('streamGenerateContent', body, '?alt=sse');
    expect(sse.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const streamed = sameIds(await sse.text());
    // The scripted upstream names the model the gateway asked for, which is the client's here.
    expect(streamed).toBe(expected);
    const events = expected.split('\r\n\r\n').filter(Boolean).map((frame) => JSON.parse(frame.replace(/^data: /, '')));
    expect(events.at(-1).candidates[0].groundingMetadata.webSearchQueries).toEqual(['stream the grounded answer']);

    const array = await viaGateway('streamGenerateContent', body);
    expect(array.headers.get('content-type')).toMatch(/^application\/json/);
    expect(JSON.parse(sameIds(await array.text()))).toEqual(events);
  });

  it('works with the SDK streaming: every event as Gemini sent it, usage counted', async () => {
    const events: GenerateContentResponse[] = [];
    for await (const event of await client(tg).models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'search cats', config: SEARCH })) events.push(event);
    expect(events.map((event) => event.text ?? '').join('')).toBe('echo: search cats');
    expect(events.at(-1)?.candidates?.[0]?.groundingMetadata?.webSearchQueries).toEqual(['search cats']);
    expect(events.every((event) => event.modelVersion === 'gemini-2.5-flash')).toBe(true);
  });

  it('refuses a built-in tool for a provider of another format, and passes over such targets in a route', async () => {
    const refused = await fetch(`${tg.url}/genai/v1beta/models/openai%2Fgpt-4o-mini:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...SEARCH }),
    });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/built-in tool 'googleSearch'/);
    expect(openai.calls).toHaveLength(0);
    // The route's OpenAI target cannot take it; its Gemini fallback can.
    const routed = await fetch(`${tg.url}/genai/v1beta/models/mixed:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], ...SEARCH }),
    });
    expect(routed.status).toBe(200);
    expect(openai.calls).toHaveLength(0);
    expect(gemini.calls[0]?.body.tools).toEqual([{ googleSearch: {} }]);
  });

  it('a guardrail redaction changes the body sent upstream and every chunk of the answer', async () => {
    const body = { contents: [{ role: 'user', parts: [{ text: 'mail jane@example.com now' }] }], ...SEARCH };
    const response = await viaGateway('streamGenerateContent', body, '?alt=sse', guarded);
    const text = await response.text();
    expect(JSON.stringify(gemini.calls[0]?.body)).not.toContain('jane@example.com');
    expect(gemini.calls[0]?.body.tools).toEqual([{ googleSearch: {} }]);
    // The upstream echoed the (already redacted) text; the output rule checks the upstream's own events in place.
    expect(text).not.toContain('jane@example.com');
    const events = text.split('\r\n\r\n').filter(Boolean).map((frame) => JSON.parse(frame.replace(/^data: /, '')));
    expect(events.map((event) => event.candidates?.[0]?.content?.parts?.map((part: { text?: string }) => part.text ?? '').join('') ?? '').join('')).toMatch(/^echo: mail \S+ now$/);
    // What the canonical chunks cannot carry is kept under the output rule: grounding, usage details, the response id.
    expect(events.at(-1)?.candidates?.[0]?.groundingMetadata?.webSearchQueries).toHaveLength(1);
    expect(events.at(-1)?.usageMetadata?.promptTokensDetails).toBeDefined();
    expect(events.every((event) => typeof event.responseId === 'string')).toBe(true);
  });

  it('redacts a match split across the upstream\'s events in those events, signatures and metadata kept', async () => {
    const event = (parts: unknown[], extra: Record<string, unknown> = {}): string =>
      `data: ${JSON.stringify({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 }, modelVersion: 'gemini-2.5-flash', responseId: 'split-1' })}\r\n\r\n`;
    const body = [
      event([{ text: 'Thinking of jo', thought: true }]),
      event([{ text: 'e@example.org.', thought: true, thoughtSignature: 'c2lnLTE=' }]),
      event([{ text: 'Write to ja' }]),
      event([{ text: 'ne@exam' }]),
      event([{ text: 'ple.com or call.' }], { finishReason: 'STOP', safetyRatings: [{ category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' }] }),
    ].join('');
    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'text/event-stream' }, body });
    const response = await viaGateway('streamGenerateContent', { contents: [{ role: 'user', parts: [{ text: 'where to?' }] }] }, '?alt=sse', guarded);
    const text = await response.text();
    expect(text).not.toMatch(/example\.(org|com)/);
    const events = text.split('\r\n\r\n').filter(Boolean).map((frame) => JSON.parse(frame.replace(/^data: /, '')));
    const parts = events.flatMap((each) => each.candidates?.[0]?.content?.parts ?? []) as Array<{ text?: string; thought?: boolean; thoughtSignature?: string }>;
    expect(parts.filter((part) => part.thought).map((part) => part.text).join('')).toBe('Thinking of [REDACTED:email].');
    expect(parts.filter((part) => !part.thought).map((part) => part.text).join('')).toBe('Write to [REDACTED:email] or call.');
    expect(parts.some((part) => part.thoughtSignature === 'c2lnLTE=')).toBe(true);
    expect(events.at(-1)?.candidates?.[0]).toMatchObject({ finishReason: 'STOP', safetyRatings: [{ category: 'HARM_CATEGORY_HARASSMENT', probability: 'NEGLIGIBLE' }] });
    expect(events.every((each) => each.responseId === 'split-1')).toBe(true);
  });

  it('checks the text of parts only a Gemini upstream takes (code execution) with the input rules too', async () => {
    const body = {
      contents: [
        { role: 'user', parts: [{ text: 'run it' }] },
        { role: 'model', parts: [{ executableCode: { language: 'PYTHON', code: 'print("jane@example.com")' } }] },
        { role: 'user', parts: [{ text: 'thanks' }] },
      ],
      tools: [{ codeExecution: {} }],
    };
    const response = await viaGateway('generateContent', body, '', guarded);
    expect(response.status).toBe(200);
    const sent = gemini.calls[0]?.body;
    expect(JSON.stringify(sent)).not.toContain('jane@example.com');
    expect(sent.contents[1].parts[0].executableCode.language).toBe('PYTHON');
    expect(sent.tools).toEqual([{ codeExecution: {} }]);
  });

  it('answers a cache hit with the upstream answer it stored, grounding included, whole and streamed', async () => {
    /** The first answer (a miss), then the hit that replays the stored one: asked until it is a hit. */
    const missThenHit = async (method: string, body: unknown, query = ''): Promise<[string, string]> => {
      let stored = '';
      const deadline = Date.now() + 5_000;
      for (;;) {
        const response = await viaGateway(method, body, query, cached);
        const text = await response.text();
        // An answer is stored just after it ended: until then a repeat is a miss too, and its answer is the one stored.
        if (response.headers.get('x-tollgate-cache') === 'hit-exact') return [stored, text];
        stored = text;
        if (Date.now() > deadline) throw new Error('no cache hit');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    const whole = { contents: [{ role: 'user', parts: [{ text: 'cache the grounded answer' }] }], ...SEARCH };
    const [first, again] = await missThenHit('generateContent', whole);
    expect(JSON.parse(again)).toEqual(JSON.parse(first));
    expect(JSON.parse(again).candidates[0].groundingMetadata.webSearchQueries).toEqual(['cache the grounded answer']);

    const streamed = { contents: [{ role: 'user', parts: [{ text: 'cache the grounded stream' }] }], ...SEARCH };
    const [live, replayed] = await missThenHit('streamGenerateContent', streamed, '?alt=sse');
    expect(replayed).toBe(live);
    expect(replayed).toContain('groundingMetadata');
  });

  it("answers with the upstream's own digits, live and from the cache: a function call's integer past 2^53 is not rounded", async () => {
    const body = `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"find_order","args":{"order_id":12345678901234567890}}}],"role":"model"},"finishReason":"STOP","index":0,"avgLogprobs":-0.12345678901234567}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"totalTokenCount":8},"modelVersion":"gemini-2.5-flash-001","responseId":"big-1"}`;
    const expected = body.replace('"gemini-2.5-flash-001"', '"gemini-2.5-flash"');
    const ask = { contents: [{ role: 'user', parts: [{ text: 'find the order with the big number' }] }] };
    gemini.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body });
    const live = await viaGateway('generateContent', ask);
    expect(await live.text()).toBe(expected);

    // Every call answers this (a repeat asked before the first answer is stored is a miss that stores its own).
    gemini.setMode({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body });
    const first = await viaGateway('generateContent', ask, '', cached);
    expect(first.headers.get('x-tollgate-cache')).toBe('miss');
    expect(await first.text()).toBe(expected);
    const deadline = Date.now() + 5_000;
    for (;;) {
      const again = await viaGateway('generateContent', ask, '', cached);
      const text = await again.text();
      if (again.headers.get('x-tollgate-cache') === 'hit-exact') {
        expect(text).toBe(expected);
        break;
      }
      if (Date.now() > deadline) throw new Error('no cache hit');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  });

  it("passes a Gemini upstream's error details on, as Google's API shows them", async () => {
    const response = await viaGateway('generateContent', { contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { temperature: 0.2, madeUpSetting: true } });
    const direct = await fetch(`${gemini.url}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': KEY },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }], generationConfig: { temperature: 0.2, madeUpSetting: true } }),
    });
    const expected = (await direct.json()) as { error: { details?: unknown[] } };
    expect(expected.error.details?.length).toBeGreaterThan(0);
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { status: string; details?: unknown[] } };
    expect(body.error.status).toBe('INVALID_ARGUMENT');
    expect(body.error.details).toEqual(expected.error.details);
  });

  it('sends the body to the API version the client addressed (v1alpha, v1), as Google serves each', async () => {
    // Google's versions take different fields: per-part mediaResolution was only in v1alpha
    // (https://ai.google.dev/gemini-api/docs/media-resolution), so a v1alpha body must reach v1alpha.
    const alpha = new GoogleGenAI({ apiKey: 'client-side-key', apiVersion: 'v1alpha', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
    const response = await alpha.models.generateContent({ model: 'gemini-2.5-flash', contents: 'which version?' });
    expect(response.text).toBe('echo: which version?');
    const events: GenerateContentResponse[] = [];
    for await (const event of await alpha.models.generateContentStream({ model: 'gemini-2.5-flash', contents: 'stream it' })) events.push(event);
    expect(events.map((event) => event.text ?? '').join('')).toBe('echo: stream it');
    expect((await viaGatewayOn('v1', 'generateContent', { contents: [{ role: 'user', parts: [{ text: 'v1' }] }] })).status).toBe(200);
    expect(gemini.calls.map((call) => call.path)).toEqual([
      '/v1alpha/models/gemini-2.5-flash:generateContent',
      '/v1alpha/models/gemini-2.5-flash:streamGenerateContent',
      '/v1/models/gemini-2.5-flash:generateContent',
    ]);
  });

  it("keeps a Gemini upstream's own status name (FAILED_PRECONDITION), which the HTTP status alone does not tell", async () => {
    // https://ai.google.dev/gemini-api/docs/troubleshooting: 400 is INVALID_ARGUMENT or FAILED_PRECONDITION (e.g. the
    // free tier not being available in the caller's country); a client tells them apart by `status`.
    const message = 'User location is not supported for the API use.';
    gemini.enqueue({ kind: 'error', status: 400, googleStatus: 'FAILED_PRECONDITION', message });
    const error = await client(tg).models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    expect(JSON.parse((error as ApiError).message)).toEqual({ error: { code: 400, message, status: 'FAILED_PRECONDITION' } });
  });

  it('counts the tokens of a request with a built-in tool instead of refusing it', async () => {
    // (The SDK sends tools with countTokens only to Vertex; the REST body carries a whole generateContentRequest.)
    const counted = await viaGateway('countTokens', { generateContentRequest: { model: 'models/gemini-2.5-flash', contents: [{ role: 'user', parts: [{ text: 'what is new with cats' }] }], ...SEARCH } });
    expect(counted.status).toBe(200);
    expect(((await counted.json()) as { totalTokens: number }).totalTokens).toBeGreaterThan(0);
  });
});
