import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Request coalescing for the exact tier: while a request is being answered by the provider, an identical one (the same
 * cache key: scope, namespace, model) waits for that answer and is served it as an exact hit, instead of calling (and
 * paying) the provider again. If the first fails or its client leaves, the waiter goes to the provider itself.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
/** What each request was charged and what the cache did, by request id (the request log's summary). */
const completed = new Map<string, { cache: string | null; costUsd: number | null }>();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  tg = await startGateway({
    // An exchange longer than this fails the attempt (a timeout), once: the failure case below.
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test', timeouts: { total_ms: 1_500 } } },
    cache: { mode: 'on', semantic: { enabled: false } },
    settings: { routing: { retry: { max_attempts: 1 } } },
  });
  tg.gateway.bus.on('request.completed', (event) => completed.set(event.requestId, { cache: event.cache, costUsd: event.costUsd }));
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

interface Answer {
  status: number;
  cache: string | null;
  coalesced: string | null;
  id: string;
  body: any;
}

async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Answer> {
  const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body), signal });
  const text = await response.text();
  const answer = response.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text;
  return { status: response.status, cache: response.headers.get('x-tollgate-cache'), coalesced: response.headers.get('x-tollgate-cache-coalesced'), id: response.headers.get('x-request-id') ?? '', body: answer };
}

async function until(what: () => boolean | Promise<boolean>, label: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await what()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${label}`);
}

async function cacheReport(): Promise<any> {
  return (await fetch(`${tg.url}/api/cache`)).json();
}

/** Resolves once `count` requests wait for an identical one's answer. */
const waiting = (count: number) => until(async () => (await cacheReport()).in_flight.waiting === count, `${count} waiting`);

const ask = (question: string) => ({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: question }] });

describe('concurrent identical requests', () => {
  it('call the provider once: the second waits and is served the first answer as an exact hit (within its namespace only)', async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 600 });
    const body = ask('Coalesce me: what is the capital of France?');
    const first = chat(body);
    await until(() => upstream.calls.length === 1, 'the first call upstream');
    const second = chat(body);
    await waiting(1);
    const [a, b] = await Promise.all([first, second]);

    expect(upstream.calls.length).toBe(1);
    expect(a).toMatchObject({ status: 200, cache: 'miss', coalesced: null });
    expect(b).toMatchObject({ status: 200, cache: 'hit-exact', coalesced: 'true' });
    expect(b.body.choices[0].message.content).toBe(a.body.choices[0].message.content);
    expect(b.body.usage).toEqual(a.body.usage);
    // Charged as any hit: nothing (the first paid).
    await until(() => completed.has(a.id) && completed.has(b.id), 'both requests logged');
    expect(completed.get(a.id)).toMatchObject({ cache: 'miss', costUsd: expect.any(Number) });
    expect(completed.get(a.id)?.costUsd).toBeGreaterThan(0);
    expect(completed.get(b.id)).toEqual({ cache: 'hit-exact', costUsd: 0 });
    const report = await cacheReport();
    expect(report.in_flight).toEqual({ leaders: 0, waiting: 0 });
    expect(report.since_start.coalesced).toBeGreaterThanOrEqual(1);

    // Scoped as the stored key is: a request of another cache namespace does not wait for it, nor share it.
    upstream.reset();
    upstream.enqueue({ kind: 'slow-headers', delayMs: 400 });
    const tenant = ask('Coalesce per tenant: what is 6 * 7?');
    const tenantA = chat(tenant, { 'x-tollgate-cache-namespace': 'tenant-a' });
    await until(() => upstream.calls.length === 1, 'the tenant call upstream');
    const tenantB = await chat(tenant, { 'x-tollgate-cache-namespace': 'tenant-b' });
    expect(tenantB).toMatchObject({ status: 200, cache: 'miss', coalesced: null });
    expect(await tenantA).toMatchObject({ status: 200, cache: 'miss' });
    expect(upstream.calls.length).toBe(2);
  });

  it('replays the answer as a proper stream to a streaming waiter (official SDK)', async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 600 });
    const body = ask('Coalesce a stream: name three primary colours.');
    const first = chat({ ...body, stream: true, stream_options: { include_usage: true } });
    await until(() => upstream.calls.length === 1, 'the first call upstream');
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    const streamed = client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: body.messages as OpenAI.ChatCompletionMessageParam[], stream: true, stream_options: { include_usage: true } }).withResponse();
    await waiting(1);
    const { data: stream, response } = await streamed;
    let text = '';
    let finish: string | null = null;
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(await first).toMatchObject({ status: 200, cache: 'miss' });

    expect(upstream.calls.length).toBe(1);
    expect(response.headers.get('x-tollgate-cache')).toBe('hit-exact');
    expect(response.headers.get('x-tollgate-cache-coalesced')).toBe('true');
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
    // The same answer a later request gets from the store.
    const later = await chat(body);
    expect(later).toMatchObject({ cache: 'hit-exact', coalesced: null });
    expect(later.body.choices[0].message.content).toBe(text);
  });

  it('sends the waiter to the provider when the first fails', async () => {
    // Longer than total_ms: the first request fails with a timeout, not retried.
    upstream.enqueue({ kind: 'slow-headers', delayMs: 5_000 });
    const body = ask('Coalesce a failure: what is the tallest mountain?');
    const first = chat(body);
    await until(() => upstream.calls.length === 1, 'the first call upstream');
    const second = chat(body);
    await waiting(1);
    const [a, b] = await Promise.all([first, second]);

    expect(a.status).toBeGreaterThanOrEqual(500);
    expect(b).toMatchObject({ status: 200, cache: 'miss', coalesced: null });
    expect(typeof b.body.choices[0].message.content).toBe('string');
    expect(upstream.calls.length).toBe(2);
    expect((await cacheReport()).in_flight).toEqual({ leaders: 0, waiting: 0 });
  });

  it("sends the waiter to the provider when the first one's client leaves", async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 1_000 });
    const body = ask('Coalesce a cancel: what is the longest river?');
    const leaving = new AbortController();
    const first = chat(body, {}, leaving.signal).catch((err: unknown) => err);
    await until(() => upstream.calls.length === 1, 'the first call upstream');
    const second = chat(body);
    await waiting(1);
    leaving.abort();
    const b = await second;
    await first;

    expect(b).toMatchObject({ status: 200, cache: 'miss', coalesced: null });
    expect(upstream.calls.length).toBe(2);
    expect(await upstream.waitForClose(0, 2_000)).toBe(true);
    expect((await cacheReport()).in_flight).toEqual({ leaders: 0, waiting: 0 });
  });

  it("lets a waiter whose own client leaves go without touching the first's answer", async () => {
    upstream.enqueue({ kind: 'slow-headers', delayMs: 600 });
    const body = ask('Coalesce a waiter that leaves: what is 2 + 2?');
    const first = chat(body);
    await until(() => upstream.calls.length === 1, 'the first call upstream');
    const leaving = new AbortController();
    const second = chat(body, {}, leaving.signal).catch((err: unknown) => err);
    await waiting(1);
    leaving.abort();
    await second;
    await waiting(0);
    expect(await first).toMatchObject({ status: 200, cache: 'miss' });
    expect(upstream.calls.length).toBe(1);
    expect((await cacheReport()).in_flight).toEqual({ leaders: 0, waiting: 0 });
  });
});
