import OpenAI from 'openai';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { openAIConfig, startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

const ask = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content }], ...extra });

/** Request ids whose answer the cache stored, per gateway (from its bus), and each gateway's last request. */
const storedIds = new WeakMap<RunningGateway, Set<string>>();
const lastRequest = new WeakMap<RunningGateway, string>();

/** A gateway whose cache stores are watched, so a test can wait for the answer of its last request to be stored. */
async function startCacheGateway(...args: Parameters<typeof startGateway>): Promise<RunningGateway> {
  const gateway = await startGateway(...args);
  const ids = new Set<string>();
  storedIds.set(gateway, ids);
  gateway.gateway.bus.on('cache.stored', (event) => ids.add(event.requestId));
  return gateway;
}

/** Calls and returns the answer's text with the cache header (the SDK's raw response gives the headers). */
async function call(gateway: RunningGateway, body: Record<string, unknown>, headers: Record<string, string> = {}, client = gateway.client) {
  const { data, response } = await client.chat.completions.create(body as never, { headers }).withResponse();
  const completion = data as unknown as { choices: Array<{ message: { content: string | null } }> };
  lastRequest.set(gateway, response.headers.get('x-request-id') ?? '');
  return {
    text: completion.choices[0]?.message.content ?? null,
    cache: response.headers.get('x-tollgate-cache'),
    similarity: response.headers.get('x-tollgate-cache-similarity'),
  };
}

/**
 * Until the answer of the gateway's last request is stored (it is stored after the client got it), and the cache
 * holds at least `entries` answers.
 */
async function stored(gateway: RunningGateway, entries: number): Promise<void> {
  const { api } = gatewayApi(() => gateway.url);
  const ids = storedIds.get(gateway);
  const last = lastRequest.get(gateway);
  for (let i = 0; i < 100; i++) {
    const done = !ids || last === undefined || ids.has(last);
    if (done && (await api('GET', '/api/cache')).body.entries >= entries) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the answer of ${last ?? 'the last request'} was not stored (or the cache has fewer than ${entries} entries)`);
}

/** Until the cache has stored `count` answers since the gateway started. */
async function storedSinceStart(gateway: RunningGateway, count: number): Promise<void> {
  const { api } = gatewayApi(() => gateway.url);
  for (let i = 0; i < 100; i++) {
    if ((await api('GET', '/api/cache')).body.since_start.stored >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the cache did not store ${count} answers`);
}

/** Until the semantic tier can answer: index loaded (or rebuilt) and the embedder's model loaded. */
async function semanticReady(gateway: RunningGateway): Promise<void> {
  const { api } = gatewayApi(() => gateway.url);
  for (let i = 0; i < 200; i++) {
    const report = (await api('GET', '/api/cache')).body;
    if (report.semantic_index.state === 'ready' && report.embedder.state === 'ready') return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('the semantic tier did not become ready');
}

describe('response cache, on', () => {
  let upstream: ScriptedUpstream;
  let gateway: RunningGateway;
  let dataDir: string;
  const config = (): ConfigInput => openAIConfig(upstream.url, { cache: { mode: 'on' } });

  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    dataDir = mkdtempSync(join(tmpdir(), 'tollgate-cache-'));
    gateway = await startCacheGateway(config(), {}, { dataDir });
  });

  afterAll(async () => {
    await gateway.stop();
    await upstream.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers a repeated question from the cache (exact), without calling the provider', async () => {
    const first = await call(gateway, ask('How many legs does a spider have?'));
    expect(first.cache).toBe('miss');
    await stored(gateway, 1);
    const calls = upstream.calls.length;
    const second = await call(gateway, ask('How many legs does a spider have?'));
    expect(second).toMatchObject({ cache: 'hit-exact', text: first.text });
    expect(upstream.calls.length).toBe(calls);
  });

  it('answers a paraphrase from the semantic tier, and not an unrelated question or an opposite one', async () => {
    const first = await call(gateway, ask('What is the capital of France?'));
    expect(first.cache).toBe('miss');
    await stored(gateway, 2);
    const paraphrase = await call(gateway, ask("Tell me France's capital city"));
    expect(paraphrase.cache).toBe('hit-semantic');
    expect(paraphrase.text).toBe(first.text);
    expect(Number(paraphrase.similarity)).toBeGreaterThan(0.5);
    expect((await call(gateway, ask('What is the capital of Germany?'))).cache).toBe('miss');
    expect((await call(gateway, ask('How do I bake sourdough bread?'))).cache).toBe('miss');
  });

  it('never serves a paraphrase-looking question in another script that asks something else', async () => {
    // Russian: "How do I install Python 3.12 on Windows?", then "How do I uninstall ...": only the Latin names and
    // the number look alike to the embedder.
    const before = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.entries as number;
    await semanticReady(gateway);
    expect((await call(gateway, ask('Как установить Python 3.12 на Windows?'))).cache).toBe('miss');
    await stored(gateway, before + 1);
    const calls = upstream.calls.length;
    const other = await call(gateway, ask('Как удалить Python 3.12 на Windows?'));
    expect(other.cache).toBe('miss');
    expect(other.text).toBe('echo: Как удалить Python 3.12 на Windows?');
    expect(upstream.calls.length).toBe(calls + 1);
  });

  it('never serves the answer to a sum for a product (questions that differ in an operator)', async () => {
    const before = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.entries as number;
    await semanticReady(gateway);
    expect((await call(gateway, ask('What is 7 + 8?'))).cache).toBe('miss');
    await stored(gateway, before + 1);
    const product = await call(gateway, ask('What is 7 * 8?'));
    expect(product.cache).toBe('miss');
    expect(product.text).toBe('echo: What is 7 * 8?');
  });

  it('never serves the answer to "when" for "where"', async () => {
    const before = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.entries as number;
    await semanticReady(gateway);
    expect((await call(gateway, ask('When was Albert Einstein born?'))).cache).toBe('miss');
    await stored(gateway, before + 1);
    const where = await call(gateway, ask('Where was Albert Einstein born?'));
    expect(where.cache).toBe('miss');
    expect(where.text).toBe('echo: Where was Albert Einstein born?');
  });

  it("never serves Mexico's population for Mexico City's", async () => {
    const before = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.entries as number;
    await semanticReady(gateway);
    expect((await call(gateway, ask("What's the population of Mexico?"))).cache).toBe('miss');
    await stored(gateway, before + 1);
    const city = await call(gateway, ask("What's the population of Mexico City?"));
    expect(city.cache).toBe('miss');
    expect(city.text).toBe("echo: What's the population of Mexico City?");
  });

  it('never crosses a system prompt, a tool list or a model', async () => {
    await call(gateway, ask('Name a primary colour.'));
    await stored(gateway, 5);
    const system = { model: 'openai/gpt-4o-mini', messages: [{ role: 'system', content: 'Answer in French.' }, { role: 'user', content: 'Name a primary colour.' }] };
    expect((await call(gateway, system)).cache).toBe('miss');
    const tools = ask('Name a primary colour.', { tools: [{ type: 'function', function: { name: 'colours', parameters: { type: 'object', properties: {} } } }] });
    expect((await call(gateway, tools)).cache).toBe('miss');
    expect((await call(gateway, { ...ask('Name a primary colour.'), model: 'openai/gpt-4o' })).cache).toBe('miss');
  });

  it('serves a cached tool call only to the same tools and tool choice, streamed or not', async () => {
    const lookup = { type: 'function' as const, function: { name: 'lookup', parameters: { type: 'object', properties: { query: { type: 'string' } } } } };
    const search = { type: 'function' as const, function: { name: 'search', parameters: { type: 'object', properties: {} } } };
    const body = ask('Find the opening hours of the museum.', { tools: [lookup, search] });
    const first = await gateway.client.chat.completions.create(body as never);
    const call1 = (first as { choices: Array<{ message: { tool_calls?: Array<{ function: { name: string; arguments: string } }> } }> }).choices[0]?.message.tool_calls?.[0];
    expect(call1?.function.name).toBe('lookup');
    const before = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.since_start.stored as number;
    for (let i = 0; i < 100 && (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.since_start.stored === before; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const again = await gateway.client.chat.completions.create(body as never).withResponse();
    expect(again.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect((again.data as typeof first).choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [{ function: call1?.function }] } });
    // The same call streamed: the tool call comes back whole, as chunks.
    const stream = await gateway.client.chat.completions.create({ ...body, stream: true } as never);
    const names: string[] = [];
    for await (const chunk of stream as unknown as AsyncIterable<{ choices: Array<{ delta: { tool_calls?: Array<{ function?: { name?: string } }> } }> }>) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) if (call.function?.name) names.push(call.function.name);
    }
    expect(names).toEqual(['lookup']);
    // Another tool choice, another tool list: not the cached call.
    expect((await call(gateway, { ...body, tool_choice: { type: 'function', function: { name: 'search' } } })).cache).toBe('miss');
    expect((await call(gateway, { ...body, tools: [search, lookup] })).cache).toBe('miss');
  });

  it('replays a hit on a streaming request as a stream that reassembles to the stored answer', async () => {
    const first = await call(gateway, ask('Which planet is the largest?'));
    await stored(gateway, 9);
    const stream = await gateway.client.chat.completions.create({ ...ask('Which planet is the largest?'), stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: unknown = null;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(first.text);
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
  });

  it('stores a streamed answer and serves it to a non-streaming request', async () => {
    const { data: stream, response } = await gateway.client.chat.completions.create({ ...ask('Streamed once: what is 2 + 2?'), stream: true }).withResponse();
    lastRequest.set(gateway, response.headers.get('x-request-id') ?? '');
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    await stored(gateway, 10);
    const again = await call(gateway, ask('Streamed once: what is 2 + 2?'));
    expect(again).toMatchObject({ cache: 'hit-exact', text });
  });

  it('keeps what a streamed answer carried for a later hit: log probabilities, service tier, and usage the client did not ask for', async () => {
    const { api } = gatewayApi(() => gateway.url);
    const question = { ...ask('Streamed with logprobs: name a prime.'), logprobs: true, top_logprobs: 2 };
    const before = (await api('GET', '/api/cache')).body.entries as number;
    // The first answer streams without include_usage: the upstream reports no usage.
    const { data: live, response } = await gateway.client.chat.completions.create({ ...question, stream: true }).withResponse();
    lastRequest.set(gateway, response.headers.get('x-request-id') ?? '');
    const liveChunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of live) liveChunks.push(chunk);
    await stored(gateway, before + 1);
    const tokens = liveChunks.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? []);
    const text = liveChunks.map((chunk) => chunk.choices[0]?.delta.content ?? '').join('');
    expect(tokens.length).toBeGreaterThan(1);
    expect(liveChunks[0]?.service_tier).toBe('default');

    const { data: whole, response: hit } = await gateway.client.chat.completions.create(question).withResponse();
    expect(hit.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(whole.choices[0]?.message.content).toBe(text);
    expect(whole.choices[0]?.logprobs?.content).toEqual(tokens);
    expect(whole.service_tier).toBe('default');
    // Counted by the gateway when the upstream reported none (an SDK reads usage on every whole answer).
    expect(whole.usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
    expect(whole.usage?.completion_tokens).toBeGreaterThan(0);

    const replayed: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of await gateway.client.chat.completions.create({ ...question, stream: true, stream_options: { include_usage: true } })) replayed.push(chunk);
    // One chunk per token, each with its own entry, as OpenAI streams them.
    const withTokens = replayed.filter((chunk) => (chunk.choices[0]?.logprobs?.content?.length ?? 0) > 0);
    expect(withTokens.map((chunk) => chunk.choices[0]?.delta.content)).toEqual(tokens.map((entry) => entry.token));
    expect(withTokens.flatMap((chunk) => chunk.choices[0]?.logprobs?.content ?? [])).toEqual(tokens);
    expect(replayed.every((chunk) => chunk.service_tier === 'default')).toBe(true);
    expect(replayed.at(-1)?.usage).toEqual(whole.usage);
  });

  it('lets a request opt out, and skips requests that ask for varied answers', async () => {
    expect((await call(gateway, ask('How many legs does a spider have?'), { 'x-tollgate-cache': 'off' })).cache).toBe('skip');
    expect((await call(gateway, ask('How many legs does a spider have?'), { 'cache-control': 'no-store' })).cache).toBe('skip');
    expect((await call(gateway, ask('How many legs does a spider have?', { temperature: 0.9 }))).cache).toBe('skip');
    expect((await call(gateway, ask('How many legs does a spider have?', { n: 2 }))).cache).toBe('skip');
  });

  it('refuses a bad TTL header with a 400 in the route\'s shape', async () => {
    await expect(call(gateway, ask('x'), { 'x-tollgate-cache-ttl': 'soon' })).rejects.toMatchObject({ status: 400, code: 'invalid_value' });
  });

  it('keeps teams apart: another team\'s key misses what one team stored', async () => {
    const { api, createKey, clientFor } = gatewayApi(() => gateway.url);
    const teamA = await api('POST', '/api/teams', { name: 'cache-a' });
    const teamB = await api('POST', '/api/teams', { name: 'cache-b' });
    const a = clientFor((await createKey({ name: 'ka', team: teamA.body.id })).key);
    const a2 = clientFor((await createKey({ name: 'ka2', team: teamA.body.id })).key);
    const b = clientFor((await createKey({ name: 'kb', team: teamB.body.id })).key);
    const before = (await api('GET', '/api/cache')).body.entries as number;
    expect((await call(gateway, ask('What colour is the sky?'), {}, a)).cache).toBe('miss');
    await stored(gateway, before + 1);
    expect((await call(gateway, ask('What colour is the sky?'), {}, a2)).cache).toBe('hit-exact');
    expect((await call(gateway, ask('What colour is the sky?'), {}, b)).cache).toBe('miss');
  });

  it('keeps its answers across a restart, and DELETE /api/cache empties it', async () => {
    await gateway.stop();
    gateway = await startCacheGateway(config(), {}, { dataDir });
    await semanticReady(gateway);
    const calls = upstream.calls.length;
    expect((await call(gateway, ask('How many legs does a spider have?'))).cache).toBe('hit-exact');
    expect((await call(gateway, ask("Tell me France's capital city"))).cache).toBe('hit-semantic');
    expect(upstream.calls.length).toBe(calls);
    const { api } = gatewayApi(() => gateway.url);
    const report = await api('GET', '/api/cache');
    expect(report.body.since_start.hits).toEqual({ exact: 1, semantic: 1 });
    const deleted = await api('DELETE', '/api/cache');
    expect(deleted.body.deleted).toBeGreaterThan(5);
    expect((await api('GET', '/api/cache')).body.entries).toBe(0);
    expect((await call(gateway, ask('How many legs does a spider have?'))).cache).toBe('miss');
  });

  it('rebuilds a corrupt index file at start instead of crashing', async () => {
    await call(gateway, ask('What is the capital of Italy?'));
    await stored(gateway, 2);
    await gateway.stop();
    const indexFiles = readdirSync(join(dataDir, 'cache')).filter((name) => name.endsWith('.hnsw'));
    expect(indexFiles.length).toBe(1);
    for (const name of indexFiles) writeFileSync(join(dataDir, 'cache', name), 'not an index');
    gateway = await startCacheGateway(config(), {}, { dataDir });
    // The exact tier answers at once; the semantic tier once the index is rebuilt from the stored vectors.
    expect((await call(gateway, ask('What is the capital of Italy?'))).cache).toBe('hit-exact');
    await semanticReady(gateway);
    expect((await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.semantic_index.vectors).toBe(2);
    expect((await call(gateway, ask("Tell me Italy's capital city"))).cache).toBe('hit-semantic');

    // A missing file too: rebuilt from the store.
    await gateway.stop();
    for (const name of readdirSync(join(dataDir, 'cache'))) rmSync(join(dataDir, 'cache', name));
    gateway = await startCacheGateway(config(), {}, { dataDir });
    await semanticReady(gateway);
    expect((await call(gateway, ask('Could you tell me the capital city of Italy?'))).cache).toBe('hit-semantic');

    // Deleting by model leaves the other models' entries.
    await call(gateway, { ...ask('What is the capital of Italy?'), model: 'openai/gpt-4o' });
    const { api } = gatewayApi(() => gateway.url);
    await stored(gateway, 3);
    expect((await api('DELETE', '/api/cache?model=openai/gpt-4o')).body.deleted).toBe(1);
    expect((await call(gateway, ask('What is the capital of Italy?'))).cache).toBe('hit-exact');
  });
});

describe('response cache, limits', () => {
  it('keeps the store under max_bytes: the least recently used answers go, the recent ones stay', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const maxBytes = 1_048_576;
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'on', max_bytes: maxBytes, semantic: { enabled: false } } }));
    try {
      const { api } = gatewayApi(() => gateway.url);
      expect((await api('GET', '/api/cache')).body.max_bytes).toBe(maxBytes);
      // Forty answers of about 60 KB each (the scripted upstream echoes the 30 KB question): 2.4 MB unbounded.
      const question = (i: number): string => `Question ${i}: ${'lorem ipsum dolor sit amet '.repeat(1_100)}`;
      for (let i = 0; i < 40; i++) await call(gateway, ask(question(i)));
      await storedSinceStart(gateway, 40);
      let report = (await api('GET', '/api/cache')).body;
      for (let i = 0; i < 100 && report.size_bytes > maxBytes; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        report = (await api('GET', '/api/cache')).body;
      }
      expect(report.size_bytes).toBeLessThanOrEqual(maxBytes);
      expect(report.entries).toBeGreaterThan(0);
      expect(report.entries).toBeLessThan(40);
      // The newest answer is still served; the oldest went first.
      expect((await call(gateway, ask(question(39)))).cache).toBe('hit-exact');
      expect((await call(gateway, ask(question(0)))).cache).toBe('miss');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });

  it('expires an answer after its TTL, evicts the least recently used past max_entries, and charges nothing for a hit', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'on', max_entries: 3, semantic: { enabled: false } } }));
    try {
      const { api, createKey, clientFor } = gatewayApi(() => gateway.url);
      // TTL from the request's header: served within it, gone after it. (Three seconds, so a loaded machine still
      // asks again within the TTL; the wait below starts after the answer was stored, so it always ends past it.)
      expect((await call(gateway, ask('Short-lived answer?'), { 'x-tollgate-cache-ttl': '3' })).cache).toBe('miss');
      await stored(gateway, 1);
      expect((await call(gateway, ask('Short-lived answer?'))).cache).toBe('hit-exact');
      await new Promise((resolve) => setTimeout(resolve, 3_100));
      expect((await call(gateway, ask('Short-lived answer?'))).cache).toBe('miss');
      // Its answer is stored again (after the client got it): cleared only once it is there.
      await storedSinceStart(gateway, 2);
      await api('DELETE', '/api/cache');

      // A budgeted key: the miss is charged, the hit is not.
      const key = await createKey({ name: 'budgeted', budget: 10 });
      const client = clientFor(key.key);
      await call(gateway, ask('Question one?'), {}, client);
      await storedSinceStart(gateway, 3);
      const spent = (await api('GET', `/api/keys/${key.id}`)).body.spend as number;
      expect(spent).toBeGreaterThan(0);
      const savedBefore = (await api('GET', '/api/cache')).body.since_start.saved_usd as number;
      expect((await call(gateway, ask('Question one?'), {}, client)).cache).toBe('hit-exact');
      expect((await api('GET', `/api/keys/${key.id}`)).body.spend).toBe(spent);
      const report = (await api('GET', '/api/cache')).body;
      expect(report.since_start.saved_usd - savedBefore).toBeCloseTo(spent, 10);
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).toMatch(/^tollgate_cache_lookups_total\{tier="exact",result="hit"\} 2$/m);
      expect(metrics).toMatch(/^tollgate_cache_lookups_total\{tier="none",result="miss"\} 3$/m);
      const saved = Number(/^tollgate_cache_saved_usd_total (\S+)$/m.exec(metrics)?.[1]);
      expect(saved).toBeCloseTo(report.since_start.saved_usd, 10);

      // Past three entries the least recently used go: question one was just used, two and three were not.
      await call(gateway, ask('Question two?'), {}, client);
      await call(gateway, ask('Question three?'), {}, client);
      await storedSinceStart(gateway, 5);
      expect((await call(gateway, ask('Question one?'), {}, client)).cache).toBe('hit-exact');
      await call(gateway, ask('Question four?'), {}, client);
      await call(gateway, ask('Question five?'), {}, client);
      await storedSinceStart(gateway, 7);
      for (let i = 0; i < 100 && (await api('GET', '/api/cache')).body.entries > 3; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await api('GET', '/api/cache')).body.entries).toBeLessThanOrEqual(3);
      expect((await call(gateway, ask('Question one?'), {}, client)).cache).toBe('hit-exact');
      expect((await call(gateway, ask('Question two?'), {}, client)).cache).toBe('miss');

      // The semantic tier is off: no answer was ever embedded (the embedder never started, no vector was indexed).
      const final = (await api('GET', '/api/cache')).body;
      expect(final.embedder).toEqual({ id: null, state: 'idle' });
      expect(final.semantic_index.vectors).toBe(0);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, shadow mode', () => {
  it('answers from the provider and records the would-be hit', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'shadow' } }));
    try {
      await call(gateway, ask('What is the boiling point of water?'));
      await stored(gateway, 1);
      const calls = upstream.calls.length;
      const second = await call(gateway, ask('What is the boiling point of water?'));
      expect(second.cache).toBe('shadow-hit');
      expect(upstream.calls.length).toBe(calls + 1);
      const report = await gatewayApi(() => gateway.url).api('GET', '/api/cache');
      expect(report.body.shadow_hits[0]).toMatchObject({ tier: 'exact', similarity: 1, question: 'What is the boiling point of water?' });
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, DELETE by model', () => {
  it('removes the answers a model gave, also those asked for through a route', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(
      openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } }, routes: { 'support-bot': { targets: [{ model: 'openai/gpt-4o-mini' }] } } }),
    );
    try {
      const { api } = gatewayApi(() => gateway.url);
      await call(gateway, { ...ask('Where is my parcel?'), model: 'support-bot' });
      await stored(gateway, 1);
      await call(gateway, ask('Where is my parcel?'));
      await stored(gateway, 2);
      await call(gateway, { ...ask('Where is my parcel?'), model: 'openai/gpt-4o' });
      await stored(gateway, 3);
      expect((await call(gateway, { ...ask('Where is my parcel?'), model: 'support-bot' })).cache).toBe('hit-exact');
      // The operator found gpt-4o-mini's answers wrong and removes them: those asked through the route too.
      expect((await api('DELETE', '/api/cache?model=openai/gpt-4o-mini')).body.deleted).toBe(2);
      expect((await call(gateway, { ...ask('Where is my parcel?'), model: 'support-bot' })).cache).toBe('miss');
      expect((await call(gateway, ask('Where is my parcel?'))).cache).toBe('miss');
      expect((await call(gateway, { ...ask('Where is my parcel?'), model: 'openai/gpt-4o' })).cache).toBe('hit-exact');
      // The name a request asked by still selects its answers (once the two misses above are stored again).
      await storedSinceStart(gateway, 5);
      expect((await api('DELETE', '/api/cache?model=support-bot')).body.deleted).toBe(1);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe("response cache, LiteLLM's per-request cache controls on /litellm", () => {
  it('reads cache: {no-cache, no-store, s-maxage, ttl} and caching: false, in the body or in extra_body', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    const litellm = new OpenAI({ baseURL: `${gateway.url}/litellm`, apiKey: 'client-side-key', maxRetries: 0, timeout: 15_000 });
    const expiries = new Map<string, number>();
    gateway.gateway.bus.on('cache.stored', (event) => expiries.set(event.requestId, Date.parse(event.expiresAt)));
    try {
      const question = ask('Which is the tallest tree?');
      const ask2 = (extra: Record<string, unknown>) => call(gateway, { ...question, ...extra }, {}, litellm);
      expect((await ask2({})).cache).toBe('miss');
      await stored(gateway, 1);
      expect((await ask2({})).cache).toBe('hit-exact');
      // no-cache: not served from the cache (LiteLLM calls the provider), the fresh answer stored.
      const calls = upstream.calls.length;
      expect((await ask2({ cache: { 'no-cache': true } })).cache).toBe('skip');
      expect(upstream.calls.length).toBe(calls + 1);
      await stored(gateway, 1);
      expect((await ask2({ extra_body: { cache: { 'no-cache': true } } })).cache).toBe('skip');
      await stored(gateway, 1);
      // no-store and caching: false leave the cache alone.
      expect((await ask2({ cache: { 'no-store': true } })).cache).toBe('skip');
      expect((await ask2({ caching: false })).cache).toBe('skip');
      // s-maxage: only an answer that young.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect((await ask2({ cache: { 's-maxage': 1 } })).cache).toBe('miss');
      await stored(gateway, 1);
      expect((await ask2({ cache: { 's-maxage': 60 } })).cache).toBe('hit-exact');
      // ttl: how long the answer is kept.
      const before = Date.now();
      expect((await call(gateway, { ...ask('Which is the oldest tree?'), cache: { ttl: 120 } }, {}, litellm)).cache).toBe('miss');
      await stored(gateway, 2);
      const expiry = expiries.get(lastRequest.get(gateway) ?? '') ?? 0;
      expect(expiry).toBeGreaterThanOrEqual(before + 120_000);
      expect(expiry).toBeLessThanOrEqual(Date.now() + 120_000);
      // A control of the wrong type is the client's error, in OpenAI's shape.
      await expect(ask2({ cache: { ttl: 'soon' } })).rejects.toMatchObject({ status: 400, param: 'cache.ttl' });
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, DELETE while answers are on their way', () => {
  it('does not store an answer the provider was still giving when the cache was emptied', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    try {
      const { api } = gatewayApi(() => gateway.url);
      // Until the upstream has received this many calls (the answers are then on their way).
      const upstreamHas = async (count: number): Promise<void> => {
        for (let i = 0; i < 200 && upstream.calls.length < count; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      };
      upstream.setMode({ kind: 'slow-headers', delayMs: 600 });
      const inFlight = call(gateway, ask('Asked just before the purge?'));
      const byModel = call(gateway, { ...ask('Asked just before the purge?'), model: 'openai/gpt-4o' });
      await upstreamHas(2);
      expect((await api('DELETE', '/api/cache')).status).toBe(200);
      await inFlight;
      await byModel;
      upstream.setMode({ kind: 'ok' });
      // Asked after the purge: stored as usual.
      await call(gateway, ask('Asked after the purge?'));
      await storedSinceStart(gateway, 1);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect((await call(gateway, ask('Asked just before the purge?'))).cache).toBe('miss');
      expect((await call(gateway, { ...ask('Asked just before the purge?'), model: 'openai/gpt-4o' })).cache).toBe('miss');
      expect((await call(gateway, ask('Asked after the purge?'))).cache).toBe('hit-exact');

      // A selective purge: only the answers it selects are kept out.
      const calls = upstream.calls.length;
      upstream.setMode({ kind: 'slow-headers', delayMs: 600 });
      const selected = call(gateway, ask('Asked before a purge by model?'));
      const other = call(gateway, { ...ask('Asked before a purge by model?'), model: 'openai/gpt-4o' });
      await upstreamHas(calls + 2);
      expect((await api('DELETE', '/api/cache?model=openai/gpt-4o-mini')).status).toBe(200);
      await selected;
      await other;
      upstream.setMode({ kind: 'ok' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await call(gateway, ask('Asked before a purge by model?'))).cache).toBe('miss');
      expect((await call(gateway, { ...ask('Asked before a purge by model?'), model: 'openai/gpt-4o' })).cache).toBe('hit-exact');
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache and token rate limits', () => {
  it("does not count a cached answer's tokens against the key's tokens_per_minute: no upstream processed them", async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    try {
      const { createKey, clientFor } = gatewayApi(() => gateway.url);
      const client = clientFor((await createKey({ name: 'tpm', tokens_per_minute: 300 })).key);
      // Each answer reports 100 tokens; a request holds its prompt and its 20 max_tokens while it runs.
      upstream.setMode({ kind: 'usage', usage: { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 } });
      const question = ask('How many moons does Mars have?', { max_tokens: 20 });
      expect((await call(gateway, question, {}, client)).cache).toBe('miss');
      await stored(gateway, 1);
      // The window holds the miss's 100 tokens; hits answer from the store and use none of the provider's.
      for (let i = 0; i < 5; i++) {
        const hit = await client.chat.completions.create(question).withResponse();
        expect(hit.response.headers.get('x-tollgate-cache')).toBe('hit-exact');
        // The stored answer's usage is still what the client reads.
        expect(hit.data.usage?.total_tokens).toBe(100);
      }
      expect(upstream.calls.length).toBe(1);
      // Nor as tokens charged on the metrics: the provider's counters show the one call it answered.
      const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
      expect(metrics).toMatch(/^tollgate_tokens_total\{provider="openai",model="gpt-4o-mini",direction="input"\} 60$/m);
      expect(metrics).toMatch(/^tollgate_tokens_total\{provider="openai",model="gpt-4o-mini",direction="output"\} 40$/m);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, shadow mode report', () => {
  it("shows the would-be hits' questions with secrets and the operator's redaction patterns taken out", async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'shadow', semantic: { enabled: false } }, settings: { log_bodies: { redact: ['\\d{4}-\\d{4}-\\d{4}-\\d{4}'] } } }));
    try {
      const question = 'My key sk-proj-Abcdefghijklmnop1234567890 and card 4111-1111-1111-1111 fail: why?';
      await call(gateway, ask(question));
      await stored(gateway, 1);
      expect((await call(gateway, ask(question))).cache).toBe('shadow-hit');
      const report = (await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body;
      const text = JSON.stringify(report.shadow_hits);
      expect(text).not.toContain('sk-proj-Abcdefghijklmnop1234567890');
      expect(text).not.toContain('4111-1111-1111-1111');
      expect(report.shadow_hits[0]).toMatchObject({ question: 'My key [REDACTED] and card [REDACTED] fail: why?', matched: 'My key [REDACTED] and card [REDACTED] fail: why?' });
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, off (the default)', () => {
  it('says nothing and stores nothing', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url));
    try {
      expect((await call(gateway, ask('Hello?'))).cache).toBeNull();
      expect((await call(gateway, ask('Hello?'))).cache).toBeNull();
      expect((await gatewayApi(() => gateway.url).api('GET', '/api/cache')).body.entries).toBe(0);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, configured through the API', () => {
  it('turns on with PATCH /api/config, per key too, and shows in GET /api/config', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const gateway = await startCacheGateway(openAIConfig(upstream.url));
    try {
      const { api, createKey, clientFor } = gatewayApi(() => gateway.url);
      expect((await api('PATCH', '/api/config', { cache: { mode: 'on', ttl_seconds: 60, semantic: { enabled: false } } })).status).toBe(200);
      expect((await api('GET', '/api/config')).body.cache).toMatchObject({ mode: 'on', ttl_seconds: 60 });
      await call(gateway, ask('Is the API config applied?'));
      await stored(gateway, 1);
      expect((await call(gateway, ask('Is the API config applied?'))).cache).toBe('hit-exact');
      // A key whose own setting turns the cache off.
      const key = await createKey({ name: 'no-cache', cache: { mode: 'off' } });
      expect((await call(gateway, ask('Is the API config applied?'), {}, clientFor(key.key))).cache).toBeNull();
      expect((await api('POST', '/api/keys', { name: 'bad', cache: { mode: 'sometimes' } })).status).toBe(400);
      expect((await api('PATCH', '/api/config', { cache: { semantic: { threshold: 0.2 } } })).status).toBe(400);
    } finally {
      await gateway.stop();
      await upstream.close();
    }
  });
});

describe('response cache, how old an answer may be', () => {
  let upstream: ScriptedUpstream;
  let gateway: RunningGateway;
  const expiries = new Map<string, number>();
  beforeAll(async () => {
    upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    gateway = await startCacheGateway(openAIConfig(upstream.url, { cache: { mode: 'on', semantic: { enabled: false } } }));
    gateway.gateway.bus.on('cache.stored', (event) => expiries.set(event.requestId, Date.parse(event.expiresAt)));
  });
  afterAll(async () => {
    await gateway.stop();
    await upstream.close();
  });

  it('stops serving answers older than a ttl_seconds the operator lowered, from the next request on', async () => {
    const { api } = gatewayApi(() => gateway.url);
    expect((await call(gateway, ask('Stored under an hour-long TTL?'))).cache).toBe('miss');
    await stored(gateway, 1);
    expect((await call(gateway, ask('Stored under an hour-long TTL?'))).cache).toBe('hit-exact');
    expect((await api('PATCH', '/api/config', { cache: { ttl_seconds: 1 } })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const calls = upstream.calls.length;
    expect((await call(gateway, ask('Stored under an hour-long TTL?'))).cache).toBe('miss');
    expect(upstream.calls.length).toBe(calls + 1);
  });

  it("never keeps an answer longer than the policy's TTL for a request that asks for more in x-tollgate-cache-ttl", async () => {
    const { api } = gatewayApi(() => gateway.url);
    expect((await api('PATCH', '/api/config', { cache: { ttl_seconds: 1 } })).status).toBe(200);
    const before = Date.now();
    expect((await call(gateway, ask('Kept for a year, please?'), { 'x-tollgate-cache-ttl': '31536000' })).cache).toBe('miss');
    await stored(gateway, 1);
    expect(expiries.get(lastRequest.get(gateway) ?? '')).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(expiries.get(lastRequest.get(gateway) ?? '')).toBeGreaterThanOrEqual(before + 1_000);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await call(gateway, ask('Kept for a year, please?'), { 'x-tollgate-cache-ttl': '31536000' })).cache).toBe('miss');
  });

  it("serves no answer older than the client's Cache-Control max-age, and stores the fresh one", async () => {
    const { api } = gatewayApi(() => gateway.url);
    expect((await api('PATCH', '/api/config', { cache: { ttl_seconds: 3600 } })).status).toBe(200);
    expect((await call(gateway, ask('How fresh is this answer?'))).cache).toBe('miss');
    await stored(gateway, 1);
    expect((await call(gateway, ask('How fresh is this answer?'), { 'cache-control': 'max-age=3600' })).cache).toBe('hit-exact');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await call(gateway, ask('How fresh is this answer?'), { 'cache-control': 'max-age=1' })).cache).toBe('miss');
    await stored(gateway, 1);
    // The fresh answer replaced the old one: served to a client that accepts a minute-old answer.
    expect((await call(gateway, ask('How fresh is this answer?'), { 'cache-control': 'max-age=60' })).cache).toBe('hit-exact');
    expect((await call(gateway, ask('How fresh is this answer?'), { 'cache-control': 'max-age=0' })).cache).toBe('miss');
  });
});
