import { GoogleGenAI, type GenerateContentResponse } from '@google/genai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnthropicRig, type AnthropicRig } from '../helpers/anthropic-rig.js';
import { startGeminiUpstream, type GeminiUpstream } from '../upstream/gemini-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

async function entries(url: string, count: number): Promise<void> {
  const { api } = gatewayApi(() => url);
  for (let i = 0; i < 100; i++) {
    if ((await api('GET', '/api/cache')).body.entries >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the cache did not reach ${count} entries`);
}

/** A message the SDK accumulated from a stream, as it was on the wire: without the fields the SDK adds (`parsed_output`, undefined ones). */
function onWire(message: object): object {
  const { parsed_output: _parsed, ...fields } = JSON.parse(JSON.stringify(message)) as Record<string, unknown>;
  return fields;
}

describe('cache hits on /anthropic, in Anthropic\'s own shape', () => {
  let rig: AnthropicRig;
  beforeAll(async () => {
    rig = await startAnthropicRig({ cache: { mode: 'on', semantic: { enabled: false } } });
  });
  afterAll(async () => rig.stop());

  const params = { model: 'anthropic/claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user' as const, content: 'Which ocean is the largest?' }] };

  it('serves a repeated message from the cache, and replays it as a stream', async () => {
    const first = await rig.client.messages.create(params).withResponse();
    expect(first.response.headers.get('x-tollgate-cache')).toBe('miss');
    await entries(rig.tg.url, 1);
    const calls = rig.upstream.calls.length;
    const second = await rig.client.messages.create(params).withResponse();
    expect(second.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(rig.upstream.calls.length).toBe(calls);
    expect(second.data.content).toEqual(first.data.content);
    expect(second.data.stop_reason).toBe(first.data.stop_reason);
    expect(second.data.usage.input_tokens).toBe(first.data.usage.input_tokens);

    const stream = rig.client.messages.stream(params);
    const message = await stream.finalMessage();
    expect(message.content).toEqual(first.data.content);
    expect(message.stop_reason).toBe('end_turn');
    expect(rig.upstream.calls.length).toBe(calls);
  });

  it("replays Anthropic's own answer on a hit: thinking blocks keep their signatures", async () => {
    const thinking = { ...params, max_tokens: 2000, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: [{ role: 'user' as const, content: 'Think, then say which sea is saltiest.' }] };
    const first = await rig.client.messages.create(thinking).withResponse();
    const signed = first.data.content.find((block) => block.type === 'thinking');
    expect(signed?.type === 'thinking' && signed.signature.length > 0).toBe(true);
    await entries(rig.tg.url, 2);
    const second = await rig.client.messages.create(thinking).withResponse();
    expect(second.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    // The upstream's message as it came (a canonical replay would give the thinking block an empty signature).
    expect(second.data).toEqual(first.data);
  });

  it('serves a stored message to a streaming client as the events of that message, signature and usage included', async () => {
    const thinking = { ...params, max_tokens: 2000, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: [{ role: 'user' as const, content: 'Think, then name the deepest trench.' }] };
    const first = await rig.client.messages.create(thinking);
    await entries(rig.tg.url, 3);
    const calls = rig.upstream.calls.length;
    const stream = rig.client.messages.stream(thinking);
    const types: string[] = [];
    stream.on('streamEvent', (event) => types.push(event.type === 'content_block_delta' ? event.delta.type : event.type));
    const message = await stream.finalMessage();
    expect(rig.upstream.calls.length).toBe(calls);
    // What the SDK makes of the events is the stored message itself, field for field.
    expect(onWire(message)).toEqual(first);
    expect(types).toContain('signature_delta');
    expect(types.at(-1)).toBe('message_stop');
  });

  it('serves a stored stream to a client that does not stream as the message its events make', async () => {
    const thinking = { ...params, max_tokens: 2000, thinking: { type: 'enabled' as const, budget_tokens: 1024 }, messages: [{ role: 'user' as const, content: 'Think, then name the longest river.' }] };
    const live = await rig.client.messages.stream(thinking).finalMessage();
    await entries(rig.tg.url, 4);
    const calls = rig.upstream.calls.length;
    const whole = await rig.client.messages.create(thinking).withResponse();
    expect(whole.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(rig.upstream.calls.length).toBe(calls);
    expect(whole.data).toEqual(onWire(live));
    const signed = whole.data.content.find((block) => block.type === 'thinking');
    expect(signed?.type === 'thinking' && signed.signature.startsWith('sig_')).toBe(true);
  });
});

describe('cache hits on /genai, in Gemini\'s own shape', () => {
  let gemini: GeminiUpstream;
  let tg: RunningGateway;
  let ai: GoogleGenAI;
  beforeAll(async () => {
    gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
    tg = await startGateway({
      cache: { mode: 'on', semantic: { enabled: false } },
      providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' } },
    });
    ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, timeout: 15_000 } });
  });
  afterAll(async () => {
    await tg.stop();
    await gemini.close();
  });

  it('serves a repeated generateContent from the cache, and a streamed one too', async () => {
    const ask = { model: 'gemini-2.5-flash', contents: 'Which desert is the largest?' };
    const first = await ai.models.generateContent(ask);
    await entries(tg.url, 1);
    const calls = gemini.calls.length;
    const second = await ai.models.generateContent(ask);
    expect(gemini.calls.length).toBe(calls);
    expect(second.text).toBe(first.text);
    expect(second.candidates?.[0]?.finishReason).toBe('STOP');
    const chunks: GenerateContentResponse[] = [];
    for await (const chunk of await ai.models.generateContentStream(ask)) chunks.push(chunk);
    expect(chunks.map((chunk) => chunk.text ?? '').join('')).toBe(first.text);
    expect(gemini.calls.length).toBe(calls);
    // Log entries are written just after each answer: wait for the third.
    const { api } = gatewayApi(() => tg.url);
    let log = await api('GET', '/api/logs?limit=3');
    for (let i = 0; i < 100 && log.body.data.length < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      log = await api('GET', '/api/logs?limit=3');
    }
    expect(log.body.data.map((entry: { cache?: string }) => entry.cache)).toEqual(['hit-exact', 'hit-exact', 'miss']);
  });

  /** The answers of a thinking, grounded request: the whole one, and the stream's events merged by hand. */
  const grounded = (question: string) => ({ model: 'gemini-2.5-flash', contents: question, config: { tools: [{ googleSearch: {} }] } });

  it('serves a stored answer to a streaming client with what it carried: thoughts, grounding, usage', async () => {
    gemini.setUsage({ thoughtText: 'Weighing the candidates.', thoughtsTokenCount: 7 });
    try {
      const ask = grounded('Which lake is the deepest?');
      const first = await ai.models.generateContent(ask);
      await entries(tg.url, 2);
      const calls = gemini.calls.length;
      const chunks: GenerateContentResponse[] = [];
      for await (const chunk of await ai.models.generateContentStream(ask)) chunks.push(chunk);
      expect(gemini.calls.length).toBe(calls);
      const parts = chunks.flatMap((chunk) => chunk.candidates?.[0]?.content?.parts ?? []);
      expect(parts).toEqual(first.candidates?.[0]?.content?.parts);
      expect(parts[0]?.thought).toBe(true);
      const last = chunks.at(-1);
      expect(last?.candidates?.[0]?.groundingMetadata).toEqual(first.candidates?.[0]?.groundingMetadata);
      expect(last?.candidates?.[0]?.groundingMetadata?.webSearchQueries).toEqual(['Which lake is the deepest?']);
      expect(last?.usageMetadata).toEqual(first.usageMetadata);
      expect(last?.usageMetadata?.thoughtsTokenCount).toBe(7);
    } finally {
      gemini.setUsage({});
    }
  });

  it('serves a stored stream to a client that does not stream as one answer: parts joined, grounding and usage of the last event', async () => {
    gemini.setUsage({ thoughtText: 'Comparing the lengths.', thoughtsTokenCount: 5 });
    try {
      const ask = grounded('Which mountain range is the longest?');
      const chunks: GenerateContentResponse[] = [];
      for await (const chunk of await ai.models.generateContentStream(ask)) chunks.push(chunk);
      expect(chunks.length).toBeGreaterThan(2);
      await entries(tg.url, 3);
      const calls = gemini.calls.length;
      const whole = await ai.models.generateContent(ask);
      expect(gemini.calls.length).toBe(calls);
      const candidate = whole.candidates?.[0];
      // The thought, then the answer's three text pieces as one part (as Gemini answers a request that does not stream).
      expect(candidate?.content?.parts).toEqual([
        { text: 'Comparing the lengths.', thought: true },
        { text: chunks.slice(1).map((chunk) => chunk.text ?? '').join('') },
      ]);
      expect(candidate?.finishReason).toBe('STOP');
      expect(candidate?.groundingMetadata).toEqual(chunks.at(-1)?.candidates?.[0]?.groundingMetadata);
      expect(whole.usageMetadata).toEqual(chunks.at(-1)?.usageMetadata);
      expect(whole.responseId).toBe(chunks.at(-1)?.responseId);
    } finally {
      gemini.setUsage({});
    }
  });

  it('keeps the API versions apart: the body went to the version its client wrote it for, whose answer may differ', async () => {
    const client = (apiVersion: string) => new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${tg.url}/genai`, apiVersion, timeout: 15_000 } });
    const [beta, v1] = [client('v1beta'), client('v1')];
    const ask = { model: 'gemini-2.5-flash', contents: 'Which ocean is the deepest?' };
    await beta.models.generateContent(ask);
    await entries(tg.url, 4);
    const calls = gemini.calls.length;
    const other = await v1.models.generateContent(ask);
    expect(other.sdkHttpResponse?.headers?.['x-tollgate-cache']).toBe('miss');
    expect(gemini.calls.slice(calls).map((call) => call.path)).toEqual(['/v1/models/gemini-2.5-flash:generateContent']);
    await entries(tg.url, 5);
    // Each version's own answer is served to its own clients.
    const again = await v1.models.generateContent(ask);
    expect(again.sdkHttpResponse?.headers?.['x-tollgate-cache']).toBe('hit-exact');
    expect(gemini.calls.length).toBe(calls + 1);
  });
});

/** Until the semantic tier can answer: index loaded (or rebuilt) and the embedder's model loaded. */
async function semanticReady(url: string): Promise<void> {
  const { api } = gatewayApi(() => url);
  for (let i = 0; i < 200; i++) {
    const report = (await api('GET', '/api/cache')).body;
    if (report.semantic_index.state === 'ready' && report.embedder.state === 'ready') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the semantic tier did not become ready');
}

describe('the semantic tier and what a native body carries that its canonical form leaves out', () => {
  let rig: AnthropicRig;
  let gemini: GeminiUpstream;
  let ai: GoogleGenAI;
  beforeAll(async () => {
    gemini = await startGeminiUpstream({ apiKey: 'gemini-test-key' });
    rig = await startAnthropicRig({ cache: { mode: 'on' }, providers: { gemini: { base_url: `${gemini.url}/v1beta`, api_key: 'gemini-test-key' } } });
    ai = new GoogleGenAI({ apiKey: 'client-side-key', httpOptions: { baseUrl: `${rig.tg.url}/genai`, timeout: 15_000 } });
    await semanticReady(rig.tg.url);
  });
  afterAll(async () => {
    await rig.stop();
    await gemini.close();
  });

  it('never answers a question about one document (by URL, passed through to Anthropic) with the answer about another', async () => {
    const ask = (url: string) => ({
      model: 'anthropic/claude-sonnet-4-5',
      max_tokens: 100,
      messages: [{ role: 'user' as const, content: [{ type: 'document' as const, source: { type: 'url' as const, url } }, { type: 'text' as const, text: 'Summarise this contract in one sentence.' }] }],
    });
    const first = await rig.client.messages.create(ask('https://example.com/contract-a.pdf')).withResponse();
    expect(first.response.headers.get('x-tollgate-cache')).toBe('miss');
    await entries(rig.tg.url, 1);
    const calls = rig.upstream.calls.length;
    const other = await rig.client.messages.create(ask('https://example.com/contract-b.pdf')).withResponse();
    expect(other.response.headers.get('x-tollgate-cache')).toBe('miss');
    expect(rig.upstream.calls.length).toBe(calls + 1);
    expect(JSON.stringify(rig.lastCall().body)).toContain('contract-b.pdf');
    // The same request again is still an exact hit.
    await entries(rig.tg.url, 2);
    const again = await rig.client.messages.create(ask('https://example.com/contract-b.pdf')).withResponse();
    expect(again.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
  });

  it('never answers a question about one uploaded file (passed through to Gemini) with the answer about another', async () => {
    const ask = (id: string) => ({
      model: 'gemini-2.5-flash',
      contents: [{ role: 'user', parts: [{ fileData: { fileUri: `https://generativelanguage.googleapis.com/v1beta/files/${id}`, mimeType: 'application/pdf' } }, { text: 'Summarise this report in one sentence.' }] }],
    });
    const { api } = gatewayApi(() => rig.tg.url);
    const before = (await api('GET', '/api/cache')).body.entries as number;
    await ai.models.generateContent(ask('report-a'));
    await entries(rig.tg.url, before + 1);
    const calls = gemini.calls.length;
    const other = await ai.models.generateContent(ask('report-b'));
    expect(other.sdkHttpResponse?.headers?.['x-tollgate-cache']).toBe('miss');
    expect(gemini.calls.length).toBe(calls + 1);
    expect(JSON.stringify(gemini.calls.at(-1)?.body)).toContain('report-b');
  });
});
