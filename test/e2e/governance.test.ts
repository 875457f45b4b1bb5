import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import OpenAI from 'openai';
import type { GatewayEvents } from '../../src/core/events.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

let upstream: ScriptedUpstream;
let tg: RunningGateway;

/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const { api, createKey, clientFor } = gatewayApi(() => tg.url);

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

describe('virtual keys', () => {
  it('creates a key with the spec fields, serves it, never forwards it, and records spend and requests', async () => {
    const { id, key } = await createKey({ name: 'search-team', budget: 10, rate_limit: 60, models: ['openai/*'] });
    expect(key.startsWith('tg-')).toBe(true);
    const completion = await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    expect(completion.choices[0]?.message.content).toBe('echo: hi');
    expect(upstream.calls[0]?.headers.authorization).toBe('Bearer sk-upstream');
    expect(JSON.stringify(upstream.calls[0]?.headers)).not.toContain(key);
    const record = await api('GET', `/api/keys/${id}`);
    expect(record.body).toMatchObject({ id, name: 'search-team', requests: 1, spend: 2 });
    expect(JSON.stringify(record.body)).not.toContain(key);
  });

  it('refuses unknown, disabled, rotated and expired keys with 401 in every mode', async () => {
    await expect(clientFor('tg-not-a-real-key').chat.completions.create({ model: 'openai/x', messages: hi })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const disabled = await createKey({ name: 'd', budget: null, rate_limit: null, models: [] });
    await api('PATCH', `/api/keys/${disabled.id}`, { disabled: true });
    await expect(clientFor(disabled.key).chat.completions.create({ model: 'openai/x', messages: hi })).rejects.toMatchObject({
      status: 401,
      code: 'key_disabled',
    });
    const rotated = await createKey({ name: 'r', budget: null, rate_limit: null, models: [] });
    const fresh = await api('POST', `/api/keys/${rotated.id}/rotate`);
    await expect(clientFor(rotated.key).chat.completions.create({ model: 'openai/x', messages: hi })).rejects.toMatchObject({ status: 401 });
    await clientFor(fresh.body.key).chat.completions.create({ model: 'openai/x', messages: hi });
    const expired = await createKey({ name: 'e', budget: null, rate_limit: null, models: [], expires_at: new Date(Date.now() - 1000).toISOString() });
    await expect(clientFor(expired.key).chat.completions.create({ model: 'openai/x', messages: hi })).rejects.toMatchObject({ status: 401, code: 'key_expired' });
    // Something that is not one of our keys is anonymous while virtual keys are optional.
    await clientFor('sk-some-provider-key').chat.completions.create({ model: 'openai/x', messages: hi });
  });

  it('answers 403 model_not_allowed for a model outside the key list', async () => {
    const { key } = await createKey({ name: 'm', budget: null, rate_limit: null, models: ['openai/gpt-4o-mini', 'groq/*'] });
    const request = clientFor(key).chat.completions.create({ model: 'openai/gpt-4o', messages: hi });
    await expect(request).rejects.toBeInstanceOf(OpenAI.PermissionDeniedError);
    await expect(request).rejects.toMatchObject({ code: 'model_not_allowed' });
    await expect(request).rejects.toThrow(/openai\/gpt-4o/);
    await clientFor(key).chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
  });
});

describe('rate limits', () => {
  it('limits requests per minute per key with OpenAI-style headers on every answer', async () => {
    const { key } = await createKey({ name: 'rl', budget: null, rate_limit: 3, models: [] });
    const client = clientFor(key);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await client.chat.completions.create({ model: 'openai/x', messages: hi }).withResponse();
      remaining.push(response.headers.get('x-ratelimit-remaining-requests') ?? '');
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('3');
      expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m/);
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const error = await client.chat.completions.create({ model: 'openai/x', messages: hi }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const limited = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(limited.code).toBe('rate_limit_exceeded');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(upstream.calls).toHaveLength(3);
  });

  it('applies a per-model limit written with a bare name to requests that name the model either way', async () => {
    const { key } = await createKey({ name: 'bare-limit', budget: null, rate_limit: null, models: [], model_rate_limits: { 'gpt-4o-mini': 2 } });
    const client = clientFor(key);
    const { response } = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: hi }).withResponse();
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('2');
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    await expect(client.chat.completions.create({ model: 'gpt-4o-mini', messages: hi })).rejects.toMatchObject({ status: 429 });
  });

  it('applies the team limit across the team’s keys', async () => {
    const team = await api('POST', '/api/teams', { name: 'platform', budget: null, rate_limit: 2 });
    expect(team.status).toBe(201);
    const a = await createKey({ name: 'ta', budget: null, rate_limit: null, models: [], team: team.body.id });
    const b = await createKey({ name: 'tb', budget: null, rate_limit: null, models: [], team: team.body.id });
    await clientFor(a.key).chat.completions.create({ model: 'openai/x', messages: hi });
    await clientFor(b.key).chat.completions.create({ model: 'openai/x', messages: hi });
    await expect(clientFor(a.key).chat.completions.create({ model: 'openai/x', messages: hi })).rejects.toMatchObject({ status: 429 });
  });
});

describe('budgets', () => {
  it('refuses with 429 insufficient_quota once the budget cannot cover a request, and emits budget events', async () => {
    const events: Array<keyof GatewayEvents> = [];
    tg.gateway.bus.on('budget.exceeded', () => events.push('budget.exceeded'));
    tg.gateway.bus.on('budget.threshold', () => events.push('budget.threshold'));
    const { id, key } = await createKey({ name: 'b', budget: 4, rate_limit: null, models: [] });
    const client = clientFor(key);
    await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    const error = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error).toMatchObject({ status: 429, code: 'budget_exceeded', type: 'insufficient_quota' });
    expect((await api('GET', `/api/keys/${id}`)).body.spend).toBe(4);
    expect(events).toContain('budget.exceeded');
    expect(events.filter((name) => name === 'budget.threshold')).toHaveLength(3);
  });

  it('never overspends under concurrency: 10 x N concurrent requests, at most N succeed', async () => {
    const n = 5;
    const { id, key } = await createKey({ name: 'c', budget: 2 * n, rate_limit: null, models: [] });
    const client = clientFor(key);
    const results = await Promise.allSettled(
      Array.from({ length: 10 * n }, () => client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 })),
    );
    const succeeded = results.filter((result) => result.status === 'fulfilled').length;
    expect(succeeded).toBeLessThanOrEqual(n);
    expect(succeeded).toBeGreaterThan(0);
    const record = (await api('GET', `/api/keys/${id}`)).body;
    expect(record.spend).toBeLessThanOrEqual(2 * n);
    expect(record.spend).toBe(2 * succeeded);
    for (const result of results) if (result.status === 'rejected') expect(result.reason).toMatchObject({ status: 429, code: 'budget_exceeded' });
  });

  it('charges a cancelled stream for what was generated and releases its reservation', async () => {
    const { id, key } = await createKey({ name: 'x', budget: 100, rate_limit: null, models: [] });
    upstream.enqueue({ kind: 'stall-after', chunks: 4 });
    const controller = new AbortController();
    const stream = await clientFor(key).chat.completions.create(
      { model: 'openai/priced-model', messages: [{ role: 'user', content: 'one two three four five six' }], stream: true, max_tokens: 20 },
      { signal: controller.signal },
    );
    let seen = 0;
    for await (const _chunk of stream) {
      seen++;
      if (seen === 3) controller.abort();
    }
    await upstream.waitForClose(0, 3000);
    // The settlement is asynchronous to the client's hang-up; give it a moment.
    let record = (await api('GET', `/api/keys/${id}`)).body;
    for (let i = 0; i < 50 && record.requests === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      record = (await api('GET', `/api/keys/${id}`)).body;
    }
    expect(record.requests).toBe(1);
    expect(record.spend).toBeGreaterThan(0);
    expect(record.spend).toBeLessThan(6);
    // The log entry follows the settlement (the terminal event waits for it), written just after.
    let logs = (await api('GET', `/api/logs?key_id=${id}`)).body.data;
    for (let i = 0; i < 100 && logs.length === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      logs = (await api('GET', `/api/logs?key_id=${id}`)).body.data;
    }
    expect(logs[0]).toMatchObject({ cancelled: true, key_id: id });
    // The reservation ($20: 20 output tokens at $1) is gone again: the key can still spend its budget.
    await clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
  });
});

describe('require_virtual_key', () => {
  it('refuses requests without one of our keys with 401', async () => {
    const strict = await startGateway(
      { settings: { require_virtual_key: true }, providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } } },
      {},
    );
    try {
      const anonymous = new OpenAI({ baseURL: `${strict.url}/v1`, apiKey: 'sk-not-ours', maxRetries: 0 });
      await expect(anonymous.chat.completions.create({ model: 'openai/x', messages: hi })).rejects.toMatchObject({ status: 401, code: 'missing_api_key' });
      const created = await fetch(`${strict.url}/api/keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'k', budget: null, rate_limit: null, models: [] }),
      });
      const { key } = (await created.json()) as { key: string };
      const viaXApiKey = await fetch(`${strict.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ model: 'openai/x', messages: hi }),
      });
      expect(viaXApiKey.status).toBe(200);
    } finally {
      await strict.stop();
    }
  });
});
