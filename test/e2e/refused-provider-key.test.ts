import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * An upstream 401/403 to a key from the gateway's config (revoked, expired) is the operator's to fix, not the
 * client's: the request moves on to the provider's other keys and to the fallbacks, and the key's breaker counts it,
 * so a revoked key in rotation stops failing half the requests. With the client's own key, the 401 is the client's.
 */

let upstream: ScriptedUpstream;
let backup: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-good', chunkDelayMs: 0 });
  backup = await startOpenAIUpstream({ apiKey: 'sk-backup', chunkDelayMs: 0 });
  tg = await startGateway({
    settings: { routing: { adaptive: false, breaker: { consecutive_failures: 2, cooldown_ms: 60_000 } } },
    providers: {
      rotating: { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ id: 'revoked', value: 'sk-revoked' }, { id: 'good', value: 'sk-good' }] },
      lapsed: { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ id: 'lapsed', value: 'sk-lapsed' }] },
      backup: { type: 'openai', base_url: `${backup.url}/v1`, api_key: 'sk-backup' },
      keyless: { type: 'openai', base_url: `${upstream.url}/v1` },
    },
    routes: { chat: { targets: [{ model: 'lapsed/m' }], fallbacks: ['backup/m'] } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
  await backup.close();
});
beforeEach(() => {
  upstream.reset();
  backup.reset();
});

const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hello' }];

describe("a provider key the upstream refuses (401)", () => {
  it("is passed over for the provider's other key: every request is answered, and the key's breaker opens", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    for (let i = 0; i < 12; i++) {
      const answer = await client.chat.completions.create({ model: 'rotating/m', messages });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
    }
    const keys = upstream.calls.map((call) => call.headers.authorization);
    // The revoked key was tried until its breaker opened (two refusals), then no more.
    expect(keys.filter((key) => key === 'Bearer sk-revoked')).toHaveLength(2);
    expect(keys.filter((key) => key === 'Bearer sk-good')).toHaveLength(12);
    const view = await jsonRequest(tg.url, 'GET', '/api/routes/rotating/m/health');
    const targets = (view.body as { groups: Array<{ targets: Array<{ key_id: string; breaker: { state: string }; health: { failures: number } }> }> }).groups[0]?.targets ?? [];
    expect(Object.fromEntries(targets.map((target) => [target.key_id, [target.breaker.state, target.health.failures]]))).toEqual({ revoked: ['open', 2], good: ['closed', 0] });
  });

  it("moves a route on to its fallback when its only key is refused", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'chat', messages });
    expect(answer.choices[0]?.finish_reason).toBe('stop');
    // One call with the refused key (never retried), then the fallback.
    expect(upstream.calls.map((call) => call.headers.authorization)).toEqual(['Bearer sk-lapsed']);
    expect(backup.calls).toHaveLength(1);
  });

  it("goes back to the client when the key was the client's own", async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0, defaultHeaders: { 'x-tollgate-provider-key': 'sk-wrong' } });
    await expect(client.chat.completions.create({ model: 'keyless/m', messages })).rejects.toMatchObject({ status: 401 });
    expect(upstream.calls).toHaveLength(1);
  });
});

describe('a refused key replaced by a new value', () => {
  it('is called with the new value at once: the breaker the old value opened does not hold the new one back', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    const created = await jsonRequest(tg.url, 'PUT', '/api/providers/renewed', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ id: 'main', value: 'sk-expired' }] });
    expect(created.status).toBe(201);
    const closed: string[] = [];
    const stop = tg.gateway.bus.on('breaker.closed', (event) => closed.push(event.target));
    try {
      // Two refusals open the key's breaker (consecutive_failures: 2, cooldown_ms: 60 s); then nothing is called.
      for (let i = 0; i < 3; i++) await expect(client.chat.completions.create({ model: 'renewed/m', messages })).rejects.toMatchObject({ status: i < 2 ? 401 : 503 });
      expect(upstream.calls).toHaveLength(2);
      // The operator puts the renewed key in under the same id: the next request goes out with it.
      const patched = await jsonRequest(tg.url, 'PATCH', '/api/providers/renewed/keys/main', { value: 'sk-good' });
      expect(patched.status).toBe(200);
      const answer = await client.chat.completions.create({ model: 'renewed/m', messages });
      expect(answer.choices[0]?.finish_reason).toBe('stop');
      expect(upstream.calls.map((call) => call.headers.authorization)).toEqual(['Bearer sk-expired', 'Bearer sk-expired', 'Bearer sk-good']);
      // An alert on the open breaker resolves: the breaker it was about is gone with the old value.
      expect(closed).toEqual(['renewed/m#main']);
      const view = await jsonRequest(tg.url, 'GET', '/api/routes/renewed/m/health');
      expect(view.body.groups[0].targets[0]).toMatchObject({ key_id: 'main', breaker: { state: 'closed' }, health: { failures: 0 } });
    } finally {
      stop();
    }
  });

  it('keeps the breaker of a key whose value stayed, when another field of it changed', async () => {
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: 'x', maxRetries: 0 });
    await jsonRequest(tg.url, 'PUT', '/api/providers/stale', { type: 'openai', base_url: `${upstream.url}/v1`, keys: [{ id: 'main', value: 'sk-stale' }] });
    for (let i = 0; i < 2; i++) await expect(client.chat.completions.create({ model: 'stale/m', messages })).rejects.toMatchObject({ status: 401 });
    expect((await jsonRequest(tg.url, 'PATCH', '/api/providers/stale/keys/main', { weight: 3 })).status).toBe(200);
    await expect(client.chat.completions.create({ model: 'stale/m', messages })).rejects.toMatchObject({ status: 503 });
    expect(upstream.calls).toHaveLength(2);
  });
});
