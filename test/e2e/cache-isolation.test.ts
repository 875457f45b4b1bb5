import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * What the response cache must not share: an answer bought with a client's own provider key with a caller whose
 * key the provider refuses, a fallback's answer as the model asked for, an answer under other forwarded beta
 * headers; and an unknown selector must not empty the cache.
 */

let upstream: ScriptedUpstream;
let byokUpstream: ScriptedUpstream;
let tg: RunningGateway;
const stored = new Set<string>();

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
  byokUpstream = await startOpenAIUpstream({ chunkDelayMs: 0, apiKey: 'sk-real-provider-key' });
  tg = await startGateway({
    providers: {
      openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' },
      lab: { type: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-lab-test' },
      byok: { type: 'openai', base_url: `${byokUpstream.url}/v1` },
    },
    cache: { mode: 'on', semantic: { enabled: false } },
    settings: { routing: { retry: { max_attempts: 2, initial_delay_ms: 1, max_delay_ms: 1 } } },
  });
  tg.gateway.bus.on('cache.stored', (event) => stored.add(event.requestId));
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  await byokUpstream.close();
});

async function chat(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<{ status: number; cache: string | null; provider: string | null; id: string }> {
  const response = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  await response.text();
  return { status: response.status, cache: response.headers.get('x-tollgate-cache'), provider: response.headers.get('x-tollgate-provider'), id: response.headers.get('x-request-id') ?? '' };
}

/** Waits until the answer to `id` was stored (the cache stores after the answer ends), or gives up. */
async function storedOnce(id: string): Promise<boolean> {
  for (let i = 0; i < 60 && !stored.has(id); i++) await new Promise((resolve) => setTimeout(resolve, 25));
  return stored.has(id);
}

const ask = (question: string) => [{ role: 'user', content: question }];

describe('the response cache keeps apart', () => {
  it("answers bought with a client's own provider key, from a caller whose key the provider refuses", async () => {
    const first = await chat({ model: 'byok/gpt-4o-mini', messages: ask('byok question') }, { 'x-tollgate-provider-key': 'sk-real-provider-key' });
    expect(first).toMatchObject({ status: 200, cache: 'miss' });
    expect(await storedOnce(first.id)).toBe(true);
    const other = await chat({ model: 'byok/gpt-4o-mini', messages: ask('byok question') }, { 'x-tollgate-provider-key': 'sk-garbage' });
    expect(other.status).toBe(401);
    const same = await chat({ model: 'byok/gpt-4o-mini', messages: ask('byok question') }, { 'x-tollgate-provider-key': 'sk-real-provider-key' });
    expect(same).toMatchObject({ status: 200, cache: 'hit-exact' });
  });

  it("a fallback's answer from the model the request asked for: it is not stored", async () => {
    const fellBack = await chat({ model: 'openai/error-503', messages: ask('fallback question'), fallbacks: ['lab/gpt-4o-mini'] });
    expect(fellBack).toMatchObject({ status: 200, cache: 'miss', provider: 'lab' });
    expect(await storedOnce(fellBack.id)).toBe(false);
    const again = await chat({ model: 'openai/error-503', messages: ask('fallback question') });
    expect(again.cache).toBe('miss');
    expect(again.status).toBe(503);
  });

  it('answers under other forwarded beta headers', async () => {
    const v1 = await chat({ model: 'openai/gpt-4o-mini', messages: ask('beta question') }, { 'openai-beta': 'feature=v1' });
    expect(await storedOnce(v1.id)).toBe(true);
    expect((await chat({ model: 'openai/gpt-4o-mini', messages: ask('beta question') }, { 'openai-beta': 'feature=v2' })).cache).toBe('miss');
    expect((await chat({ model: 'openai/gpt-4o-mini', messages: ask('beta question') })).cache).toBe('miss');
    expect((await chat({ model: 'openai/gpt-4o-mini', messages: ask('beta question') }, { 'openai-beta': 'feature=v1' })).cache).toBe('hit-exact');
  });
});

describe('DELETE /api/cache', () => {
  it('refuses a selector it does not know (a typo must not empty the cache) and keeps every entry', async () => {
    const answer = await chat({ model: 'openai/gpt-4o-mini', messages: ask('kept question') });
    expect(await storedOnce(answer.id)).toBe(true);
    const typo = await jsonRequest(tg.url, 'DELETE', '/api/cache?team=t1');
    expect(typo.status).toBe(400);
    expect(typo.body).toMatchObject({ error: { code: 'invalid_query', param: 'team' } });
    expect((await chat({ model: 'openai/gpt-4o-mini', messages: ask('kept question') })).cache).toBe('hit-exact');
    const all = await jsonRequest(tg.url, 'DELETE', '/api/cache');
    expect(all.status).toBe(200);
    expect((all.body as { deleted: number }).deleted).toBeGreaterThan(0);
  });
});

describe('a listed plugin', () => {
  it('keeps its answers from keys that do not list it (a hit would skip it), and theirs from it', async () => {
    const own = await startGateway({
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream-test' } },
      cache: { mode: 'on', semantic: { enabled: false } },
      plugins: [{ name: 'redact-word', path: resolve(import.meta.dirname, '../../plugins/examples/redact-word.ts'), options: { words: ['password'] }, apply: 'listed' }],
    });
    try {
      const storedHere = new Set<string>();
      own.gateway.bus.on('cache.stored', (event) => storedHere.add(event.requestId));
      const team = (await jsonRequest(own.url, 'POST', '/api/teams', { name: 'support' })).body as { id: string };
      const listing = (await jsonRequest(own.url, 'POST', '/api/keys', { name: 'listing', team: team.id, plugins: ['redact-word'] })).body as { key: string };
      const plain = (await jsonRequest(own.url, 'POST', '/api/keys', { name: 'plain', team: team.id })).body as { key: string };
      const ask = async (key: string) => {
        const response = await fetch(`${own.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
          body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'my password is swordfish' }] }),
        });
        const body = (await response.json()) as { choices: Array<{ message: { content: string } }> };
        return { cache: response.headers.get('x-tollgate-cache'), id: response.headers.get('x-request-id') ?? '', text: body.choices[0]?.message.content ?? '' };
      };
      const first = await ask(plain.key);
      for (let i = 0; i < 60 && !storedHere.has(first.id); i++) await new Promise((done) => setTimeout(done, 25));
      expect(storedHere.has(first.id)).toBe(true);
      const redacted = await ask(listing.key);
      expect(redacted.cache).toBe('miss');
      expect(redacted.text).not.toContain('password');
      expect((await ask(plain.key)).cache).toBe('hit-exact');
    } finally {
      await own.stop();
    }
  });
});
