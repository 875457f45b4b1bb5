import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/** One event of an OpenAI chat stream, as the provider writes it. */
function chunkEvent(id: string, model: string, delta: Record<string, unknown>, finish: string | null = null): string {
  return `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created: 1_700_000_000, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
}

/** What a cache hit serves, against what the same request answered from the provider would be. */
describe('response cache, what a hit serves', () => {
  let upstream: ScriptedUpstream;
  let gateway: RunningGateway;
  const stored = new Set<string>();

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    gateway.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
  });

  afterAll(async () => {
    await gateway.stop();
    await upstream.close();
  });

  /** Until the answer of request `id` is in the cache (it is stored after the client got it). */
  async function storedAnswerOf(id: string | null): Promise<void> {
    for (let i = 0; i < 100 && !stored.has(id ?? ''); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stored.has(id ?? '')).toBe(true);
  }

  it('echoes the model name the client asked for now, not the one the storing request used', async () => {
    const messages = [{ role: 'user' as const, content: 'Which model name is echoed?' }];
    // A bare name resolves to the one provider serving it: the pipeline (and the cache key) see openai/gpt-4o-mini.
    const first = await gateway.client.chat.completions.create({ model: 'gpt-4o-mini', messages }).withResponse();
    expect(first.data.model).toBe('gpt-4o-mini');
    await storedAnswerOf(first.response.headers.get('x-request-id'));

    const whole = await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
    expect(whole.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(whole.data.model).toBe('openai/gpt-4o-mini');

    const models = new Set<string>();
    for await (const chunk of await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages, stream: true })) models.add(chunk.model);
    expect([...models]).toEqual(['openai/gpt-4o-mini']);
  });

  // A miss reaches an OpenAI client as the provider wrote it (but for the model name); a hit was written from
  // tollgate's parse of the stored answer instead: fields it does not model were dropped from a replayed stream
  // (OpenAI's own `obfuscation`, a vendor's extensions), the chunks cut anew, and numbers spelled again (a log
  // probability's exponent, an integer past 2^53 rounded).
  it('serves an OpenAI client the answer the miss served, byte for byte, whole and streamed', async () => {
    const whole =
      '{"id":"chatcmpl-V","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,' +
      '"message":{"role":"assistant","content":"Caf\\u00e9 au lait.","refusal":null,"annotations":[]},"logprobs":{"content":[{"token":"Caf","logprob":-1.0e-6,' +
      '"bytes":[67,97,102],"top_logprobs":[]}],"refusal":null},"finish_reason":"stop","provider_specific_fields":{"stop_reason":null}}],' +
      '"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0}},' +
      '"service_tier":"default","system_fingerprint":"fp_44709d6fcb","x_request_seed":12345678901234567890}';
    upstream.enqueue({ kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: whole });
    const ask = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Coffee with milk, in French?' }], logprobs: true };
    const miss = await gateway.client.chat.completions.create(ask).asResponse();
    const missText = await miss.text();
    expect(missText).toBe(whole.replace('"gpt-4o-mini-2024-07-18"', '"openai/gpt-4o-mini"'));
    await storedAnswerOf(miss.headers.get('x-request-id'));
    const hit = await gateway.client.chat.completions.create(ask).asResponse();
    expect(hit.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(await hit.text()).toBe(missText);

    // As OpenAI streams: `obfuscation` on each chunk, the fingerprint and tier on every one, usage last.
    const frame = (fields: Record<string, unknown>) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-W', object: 'chat.completion.chunk', created: 1_700_000_000, model: 'gpt-4o-mini-2024-07-18', service_tier: 'default', system_fingerprint: 'fp_44709d6fcb', ...fields })}\n\n`;
    const delta = (value: Record<string, unknown>, finish: string | null, obfuscation: string) => frame({ choices: [{ index: 0, delta: value, logprobs: null, finish_reason: finish }], usage: null, obfuscation });
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        delta({ role: 'assistant', content: '', refusal: null }, null, 'kq7') +
        delta({ content: 'Caf' }, null, 'Zx1u') +
        delta({ content: 'é au lait.' }, null, 'p') +
        delta({}, 'stop', 'Qe9') +
        frame({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 }, obfuscation: 'a2' }) +
        'data: [DONE]\n\n',
    });
    const streamed = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Coffee with milk, in French? (streamed)' }], stream: true as const, stream_options: { include_usage: true } };
    const streamedMiss = await gateway.client.chat.completions.create(streamed).asResponse();
    const streamedMissText = await streamedMiss.text();
    expect(streamedMissText).toContain('"obfuscation":"Zx1u"');
    await storedAnswerOf(streamedMiss.headers.get('x-request-id'));
    const streamedHit = await gateway.client.chat.completions.create(streamed).asResponse();
    expect(streamedHit.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(await streamedHit.text()).toBe(streamedMissText);
    // A client that did not ask for usage gets none from the hit, as from a miss.
    let usage = false;
    for await (const chunk of await gateway.client.chat.completions.create({ ...streamed, stream_options: undefined })) usage ||= chunk.usage != null;
    expect(usage).toBe(false);
  });

  // Perplexity answers with its sources beside the choices (`citations`, `search_results`), whole and on every chunk;
  // OpenRouter names the provider that served (`provider`). A stored stream was assembled without such fields and a
  // stored answer replayed as chunks without them, so a hit in the other shape lost the answer's sources.
  it("keeps a vendor's own top-level fields (Perplexity's citations) when a stored stream serves a whole answer, and the other way round", async () => {
    const citations = ['https://en.wikipedia.org/wiki/Mount_Everest', 'https://www.nationalgeographic.com/everest'];
    const search_results = [{ title: 'Mount Everest', url: citations[0], date: null }];
    const frame = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'pplx-1', model: 'sonar', created: 1_700_000_000, usage: null, citations, search_results, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: frame({ role: 'assistant', content: 'Mount ' }) + frame({ content: 'Everest.' }) + frame({}, 'stop') + 'data: [DONE]\n\n',
    });
    type Sourced = { citations?: unknown; search_results?: unknown };
    const streamedAsk = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Highest mountain, with sources?' }] };
    const { data: live, response } = await gateway.client.chat.completions.create({ ...streamedAsk, stream: true }).withResponse();
    for await (const chunk of live) expect((chunk as Sourced).citations).toEqual(citations);
    await storedAnswerOf(response.headers.get('x-request-id'));
    const whole = await gateway.client.chat.completions.create(streamedAsk).withResponse();
    expect(whole.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(whole.data.choices[0]?.message.content).toBe('Mount Everest.');
    expect(whole.data as Sourced).toMatchObject({ citations, search_results });

    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'pplx-2', model: 'sonar', created: 1_700_000_000,
        usage: { prompt_tokens: 6, completion_tokens: 3, total_tokens: 9 }, citations, search_results, object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Mount Everest.' }, finish_reason: 'stop' }],
      }),
    });
    const wholeAsk = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Highest mountain, with sources? (whole)' }] };
    const first = await gateway.client.chat.completions.create(wholeAsk).withResponse();
    expect(first.data as Sourced).toMatchObject({ citations });
    await storedAnswerOf(first.response.headers.get('x-request-id'));
    const { data: replay, response: replayed } = await gateway.client.chat.completions.create({ ...wholeAsk, stream: true }).withResponse();
    expect(replayed.headers.get('x-tollgate-cache')).toBe('hit-exact');
    let text = '';
    for await (const chunk of replay) {
      text += chunk.choices[0]?.delta.content ?? '';
      expect(chunk as Sourced).toMatchObject({ citations, search_results });
    }
    expect(text).toBe('Mount Everest.');
  });

  // OpenRouter's image models (modalities: ["image", "text"]) answer with `message.images`, streamed as `delta.images`
  // (each image whole in a delta). A hit in the other shape than the answer was stored in came back without them.
  it("keeps OpenRouter's generated images when a stored stream serves a whole answer, and the other way round", async () => {
    const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } };
    type Pictured = { images?: unknown };
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        chunkEvent('gen-img-1', 'google/gemini-2.5-flash-image', { role: 'assistant', content: 'Here is a red circle.' }) +
        chunkEvent('gen-img-1', 'google/gemini-2.5-flash-image', { images: [image] }) +
        chunkEvent('gen-img-1', 'google/gemini-2.5-flash-image', {}, 'stop') +
        'data: [DONE]\n\n',
    });
    const streamedAsk = { model: 'openai/gpt-4o-mini', modalities: ['image', 'text'], messages: [{ role: 'user' as const, content: 'Draw a red circle.' }] } as const;
    const { data: live, response } = await gateway.client.chat.completions.create({ ...streamedAsk, stream: true } as never).withResponse();
    for await (const _chunk of live as unknown as AsyncIterable<unknown>) void _chunk;
    await storedAnswerOf(response.headers.get('x-request-id'));
    const whole = await gateway.client.chat.completions.create(streamedAsk as never).withResponse();
    expect(whole.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect((whole.data as { choices: Array<{ message: Pictured }> }).choices[0]?.message).toMatchObject({ content: 'Here is a red circle.', images: [image] });

    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        id: 'gen-img-2', object: 'chat.completion', created: 1_700_000_000, model: 'google/gemini-2.5-flash-image',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Here is a blue square.', images: [image] }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 5, completion_tokens: 1290, total_tokens: 1295 },
      }),
    });
    const wholeAsk = { ...streamedAsk, messages: [{ role: 'user' as const, content: 'Draw a blue square.' }] };
    const first = await gateway.client.chat.completions.create(wholeAsk as never).withResponse();
    await storedAnswerOf(first.response.headers.get('x-request-id'));
    const { data: replay, response: replayed } = await gateway.client.chat.completions.create({ ...wholeAsk, stream: true } as never).withResponse();
    expect(replayed.headers.get('x-tollgate-cache')).toBe('hit-exact');
    const images: unknown[] = [];
    for await (const chunk of replay as unknown as AsyncIterable<{ choices: Array<{ delta: Pictured }> }>) {
      const piece = chunk.choices[0]?.delta.images;
      if (Array.isArray(piece)) images.push(...piece);
    }
    expect(images).toEqual([image]);
  });

  it('keeps a streamed legacy function call (functions / function_call) for a later hit', async () => {
    // An OpenAI model answering the deprecated `functions` parameter streams `delta.function_call` pieces.
    const frame = (delta: Record<string, unknown>, finish: string | null = null) => chunkEvent('chatcmpl-fn', 'gpt-4o-mini', delta, finish);
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        frame({ role: 'assistant', content: null, function_call: { name: 'get_weather', arguments: '' } }) +
        frame({ function_call: { arguments: '{"city":' } }) +
        frame({ function_call: { arguments: '"Paris"}' } }) +
        frame({}, 'function_call') +
        'data: [DONE]\n\n',
    });
    const body = {
      model: 'openai/gpt-4o-mini',
      messages: [{ role: 'user' as const, content: 'What is the weather in Paris?' }],
      functions: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
    };
    const { data: live, response } = await gateway.client.chat.completions.create({ ...body, stream: true }).withResponse();
    let args = '';
    for await (const chunk of live) args += chunk.choices[0]?.delta.function_call?.arguments ?? '';
    expect(args).toBe('{"city":"Paris"}');
    await storedAnswerOf(response.headers.get('x-request-id'));

    const hit = await gateway.client.chat.completions.create(body).withResponse();
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(hit.data.choices[0]).toMatchObject({ finish_reason: 'function_call', message: { function_call: { name: 'get_weather', arguments: '{"city":"Paris"}' } } });

    const replayed = { name: '', arguments: '' };
    for await (const chunk of await gateway.client.chat.completions.create({ ...body, stream: true })) {
      replayed.name += chunk.choices[0]?.delta.function_call?.name ?? '';
      replayed.arguments += chunk.choices[0]?.delta.function_call?.arguments ?? '';
    }
    expect(replayed).toEqual({ name: 'get_weather', arguments: '{"city":"Paris"}' });
  });

  it("keeps a streamed answer's `reasoning` (OpenRouter's, vLLM's and Groq's name) for a later hit, whole or streamed", async () => {
    const frame = (delta: Record<string, unknown>, finish: string | null = null) => chunkEvent('chatcmpl-r', 'gpt-4o-mini', delta, finish);
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body: frame({ role: 'assistant', content: '' }) + frame({ reasoning: 'Six times seven ' }) + frame({ reasoning: 'is forty-two.' }) + frame({ content: '42' }) + frame({}, 'stop') + 'data: [DONE]\n\n',
    });
    const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'What is six times seven?' }] };
    type ReasoningDelta = { reasoning?: string; content?: string | null };
    const { data: live, response } = await gateway.client.chat.completions.create({ ...body, stream: true }).withResponse();
    let reasoning = '';
    for await (const chunk of live) reasoning += (chunk.choices[0]?.delta as ReasoningDelta | undefined)?.reasoning ?? '';
    expect(reasoning).toBe('Six times seven is forty-two.');
    const id = response.headers.get('x-request-id') ?? '';
    await storedAnswerOf(id);

    const hit = await gateway.client.chat.completions.create(body).withResponse();
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(hit.data.choices[0]?.message).toMatchObject({ content: '42', reasoning: 'Six times seven is forty-two.' });

    let replayed = '';
    for await (const chunk of await gateway.client.chat.completions.create({ ...body, stream: true })) replayed += (chunk.choices[0]?.delta as ReasoningDelta | undefined)?.reasoning ?? '';
    expect(replayed).toBe('Six times seven is forty-two.');
  });

  it("keeps a streamed answer's audio (modalities: audio) for a later hit, whole or streamed", async () => {
    // As gpt-4o-audio-preview streams it: the audio's id, then transcript and data pieces, then its expiry.
    const frame = (delta: Record<string, unknown>, finish: string | null = null) => chunkEvent('chatcmpl-a', 'gpt-4o-audio-preview', delta, finish);
    upstream.enqueue({
      kind: 'raw',
      status: 200,
      headers: { 'content-type': 'text/event-stream' },
      body:
        frame({ role: 'assistant', content: null, refusal: null, audio: { id: 'audio_1', transcript: '' } }) +
        frame({ audio: { transcript: 'Hello ' } }) +
        frame({ audio: { transcript: 'there.' } }) +
        frame({ audio: { data: 'UklGRg' } }) +
        frame({ audio: { data: 'AAAA' } }) +
        frame({ audio: { expires_at: 1_700_003_600 } }) +
        frame({}, 'stop') +
        'data: [DONE]\n\n',
    });
    const body = { model: 'openai/gpt-4o-audio-preview', modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'pcm16' }, messages: [{ role: 'user' as const, content: 'Say hello.' }] };
    type AudioDelta = { audio?: { id?: string; transcript?: string; data?: string; expires_at?: number } };
    const { data: live, response } = await gateway.client.chat.completions.create({ ...body, stream: true } as never).withResponse();
    for await (const _chunk of live as unknown as AsyncIterable<unknown>) void _chunk;
    const id = response.headers.get('x-request-id') ?? '';
    await storedAnswerOf(id);

    const audio = { id: 'audio_1', transcript: 'Hello there.', data: 'UklGRgAAAA', expires_at: 1_700_003_600 };
    const hit = await gateway.client.chat.completions.create(body as never).withResponse();
    expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect((hit.data as { choices: Array<{ message: unknown }> }).choices[0]?.message).toMatchObject({ audio });

    const replayed = { id: '', transcript: '', data: '', expires_at: 0 };
    for await (const chunk of (await gateway.client.chat.completions.create({ ...body, stream: true } as never)) as unknown as AsyncIterable<{ choices: Array<{ delta: AudioDelta }> }>) {
      const piece = chunk.choices[0]?.delta.audio;
      if (!piece) continue;
      replayed.id = piece.id ?? replayed.id;
      replayed.transcript += piece.transcript ?? '';
      replayed.data += piece.data ?? '';
      replayed.expires_at = piece.expires_at ?? replayed.expires_at;
    }
    expect(replayed).toEqual(audio);
  });
});

describe('response cache, an OpenRouter answer', () => {
  it('stores it though every choice carries OpenRouter’s own native_finish_reason', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startGateway({
      providers: { router: { type: 'openrouter', base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
      cache: { mode: 'on', semantic: { enabled: false } },
    });
    const stored = new Set<string>();
    gateway.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
    try {
      // As OpenRouter answers: its upstream's own finish reason beside OpenAI's word, on every choice.
      upstream.enqueue({
        kind: 'raw',
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: 'gen-1',
          object: 'chat.completion',
          created: 1_700_000_000,
          model: 'anthropic/claude-sonnet-4.5',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.' }, finish_reason: 'stop', native_finish_reason: 'end_turn', logprobs: null }],
          usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 },
        }),
      });
      const body = { model: 'router/anthropic/claude-sonnet-4.5', messages: [{ role: 'user' as const, content: 'Capital of France?' }] };
      const first = await gateway.client.chat.completions.create(body).withResponse();
      const id = first.response.headers.get('x-request-id') ?? '';
      for (let i = 0; i < 100 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(stored.has(id)).toBe(true);
      const hit = await gateway.client.chat.completions.create(body).withResponse();
      expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
      expect(hit.data.choices[0]?.message.content).toBe('Paris.');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, semantic candidates', () => {
  it('finds a paraphrase of its own scope behind closer matches of other scopes', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startGateway(openAIConfig(upstream.url, { cache: { mode: 'on' } }));
    const stored = new Set<string>();
    gateway.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
    const ask = async (messages: Array<{ role: 'system' | 'user'; content: string }>) => {
      const { data, response } = await gateway.client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages }).withResponse();
      const id = response.headers.get('x-request-id') ?? '';
      for (let i = 0; i < 200 && response.headers.get('x-tollgate-cache') === 'miss' && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      return { text: data.choices[0]?.message.content, cache: response.headers.get('x-tollgate-cache') };
    };
    try {
      const { api } = gatewayApi(() => gateway.url);
      for (let i = 0; i < 200; i++) {
        const report = (await api('GET', '/api/cache')).body;
        if (report.semantic_index.state === 'ready' && report.embedder.state === 'ready') break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const own = await ask([{ role: 'user', content: 'What is the capital of France?' }]);
      expect(own.cache).toBe('miss');
      // The paraphrase itself, asked under eight other system prompts: the same embedding as the question below
      // (system prompts are not embedded), so the closest eight vectors belong to scopes it may not use.
      for (let i = 1; i <= 8; i++) expect((await ask([{ role: 'system', content: `You are assistant number ${i}.` }, { role: 'user', content: "Tell me France's capital city" }])).cache).toBe('miss');
      expect((await api('GET', '/api/cache')).body.semantic_index.vectors).toBe(9);

      const paraphrase = await ask([{ role: 'user', content: "Tell me France's capital city" }]);
      expect(paraphrase).toEqual({ text: own.text, cache: 'hit-semantic' });
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});
