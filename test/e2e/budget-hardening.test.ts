import Anthropic from '@anthropic-ai/sdk';
import { ApiError, GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Budgets against hostile numbers: a negative max_tokens used to reserve a negative amount (60 concurrent
// streams all got past a budget) and then leave money "held" for ever; an upstream reporting 1e300 tokens
// was charged for them.

let upstream: ScriptedUpstream;
let tg: RunningGateway;

/** $1 a token, in and out, so spend shows the tokens charged. */
const PRICES = { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});
beforeEach(() => upstream.reset());

async function createKey(fields: Record<string, unknown>): Promise<{ id: string; key: string }> {
  const created = await jsonRequest(tg.url, 'POST', '/api/keys', { rate_limit: null, models: [], ...fields });
  expect(created.status).toBe(201);
  return { id: created.body.id, key: created.body.key };
}

function clientFor(key: string): OpenAI {
  return new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
}

async function spendOf(id: string): Promise<number> {
  return (await jsonRequest(tg.url, 'GET', `/api/keys/${id}`)).body.spend;
}

/** Waits until nothing is held (settling after a hang-up is asynchronous), then asserts it. */
async function expectNothingHeld(): Promise<void> {
  for (let i = 0; i < 100 && Object.keys(tg.gateway.reservations.snapshot()).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(tg.gateway.reservations.snapshot()).toEqual({});
}

const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

describe('numbers a reservation is made of are checked first', () => {
  it('refuses bad max_tokens, max_completion_tokens and n on /v1 with a 400 naming the field', async () => {
    const { key } = await createKey({ name: 'numbers', budget: 1000 });
    const client = clientFor(key);
    const cases: Array<[string, number | string]> = [
      ['max_tokens', -1000000],
      ['max_tokens', -1],
      ['max_tokens', 1.5],
      ['max_tokens', 1e12],
      ['max_tokens', '100'],
      ['max_completion_tokens', -5],
      ['max_completion_tokens', 3e9],
      ['n', 0],
      ['n', -2],
      ['n', 2.5],
      ['n', 1000],
    ];
    for (const [field, value] of cases) {
      const error = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, [field]: value } as never).catch((err: unknown) => err);
      expect(error, `${field}: ${value}`).toBeInstanceOf(OpenAI.BadRequestError);
      expect(error).toMatchObject({ status: 400, type: 'invalid_request_error', param: field });
    }
    // JSON's 1e400 parses as Infinity.
    const infinite = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: '{"model":"openai/priced-model","messages":[{"role":"user","content":"hi"}],"max_tokens":1e400}',
    });
    expect(infinite.status).toBe(400);
    expect(((await infinite.json()) as { error: { param: string } }).error.param).toBe('max_tokens');
    // Anonymous requests are checked too, and nothing reached the upstream.
    const anonymous = await tg.client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: -3 }).catch((err: unknown) => err);
    expect(anonymous).toMatchObject({ status: 400, param: 'max_tokens' });
    expect(upstream.calls).toHaveLength(0);
    // Good values still pass.
    const ok = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5, n: 2 });
    expect(ok.choices).toHaveLength(2);
    await expectNothingHeld();
  });

  it('refuses them in the Anthropic and Gemini shapes on /anthropic and /genai', async () => {
    const { key } = await createKey({ name: 'dialects', budget: 1000 });
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key, maxRetries: 0 });
    for (const maxTokens of [-1000000, 1e12]) {
      // Streamed: the SDK itself refuses a non-streamed request whose max_tokens suggests a long answer.
      const error = await anthropic.messages
        .create({ model: 'openai/priced-model', max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }], stream: true })
        .catch((err: unknown) => err);
      expect(error).toBeInstanceOf(Anthropic.BadRequestError);
      expect((error as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      expect(String((error as Error).message)).toContain('max_tokens');
    }
    const ai = new GoogleGenAI({ apiKey: key, httpOptions: { baseUrl: `${tg.url}/genai` } });
    for (const config of [{ maxOutputTokens: -1000000 }, { maxOutputTokens: 2.5 }, { candidateCount: -1 }]) {
      const error = await ai.models.generateContent({ model: 'openai/priced-model', contents: 'hi', config }).catch((err: unknown) => err);
      expect(error, JSON.stringify(config)).toBeInstanceOf(ApiError);
      expect((error as ApiError).status).toBe(400);
      expect((error as ApiError).message).toContain(Object.keys(config)[0]);
    }
    expect(upstream.calls).toHaveLength(0);
    await expectNothingHeld();
  });

  it('60 concurrent streams with max_tokens -1000000 on a keyed budget: all 400, nothing spent, nothing held', async () => {
    const team = await jsonRequest(tg.url, 'POST', '/api/teams', { name: 'negative-team', budget: 10, rate_limit: null });
    expect(team.status).toBe(201);
    const { id, key } = await createKey({ name: 'negative', budget: 10, team: team.body.id });
    const client = clientFor(key);
    const results = await Promise.allSettled(
      Array.from({ length: 60 }, async () => {
        const stream = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: -1000000, stream: true });
        for await (const _chunk of stream);
      }),
    );
    expect(results.every((result) => result.status === 'rejected')).toBe(true);
    for (const result of results) expect((result as PromiseRejectedResult).reason).toMatchObject({ status: 400, param: 'max_tokens' });
    expect(upstream.calls).toHaveLength(0);
    expect(await spendOf(id)).toBe(0);
    await expectNothingHeld();
    // The key and its team can still spend their budget: $2 ("echo: hi" is 2 tokens) + the prompt's 3 words.
    await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });
    expect(await spendOf(id)).toBeGreaterThan(0);
    expect(await spendOf(id)).toBeLessThanOrEqual(10);
  });
});

describe('what is held returns to zero after every kind of ending', () => {
  it('success, upstream error, hang-up, stream error after the first byte, budget exceeded, rate limited, fallback', async () => {
    const team = await jsonRequest(tg.url, 'POST', '/api/teams', { name: 'endings-team', budget: 1000, rate_limit: null });
    const { key } = await createKey({ name: 'endings', budget: 1000, team: team.body.id });
    const client = clientFor(key);
    const endings: Record<string, () => Promise<unknown>> = {
      success: () => client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5 }),
      'success, streamed': async () => {
        const stream = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5, stream: true, stream_options: { include_usage: true } });
        for await (const _chunk of stream);
      },
      'upstream error': () => client.chat.completions.create({ model: 'openai/error-500', messages: hi, max_tokens: 5 }),
      'client hang-up mid-stream': async () => {
        upstream.enqueue({ kind: 'stall-after', chunks: 2 });
        const controller = new AbortController();
        const stream = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5, stream: true }, { signal: controller.signal });
        for await (const _chunk of stream) {
          // Held while the stream is open: the test sees a reservation, so its return to zero means something.
          expect(tg.gateway.reservations.snapshot()[`team:${team.body.id}`]).toBeGreaterThan(0);
          controller.abort();
        }
      },
      'stream error after the first byte': async () => {
        upstream.enqueue({ kind: 'break-after', chunks: 2 });
        const stream = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5, stream: true });
        for await (const _chunk of stream);
      },
      'budget exceeded': () => client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5000 }),
      'fallback after an upstream error': () =>
        client.chat.completions.create({ model: 'openai/error-503', messages: hi, max_tokens: 5, fallbacks: ['openai/priced-model'] } as never),
      'invalid request': () => client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: -5 }),
    };
    for (const [ending, run] of Object.entries(endings)) {
      await run().catch(() => undefined);
      await expectNothingHeld().catch((err: unknown) => {
        throw new Error(`after "${ending}": ${String(err)}`);
      });
    }
    const limited = await createKey({ name: 'limited', budget: 1000, rate_limit: 1 });
    await clientFor(limited.key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5 });
    await expect(clientFor(limited.key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5 })).rejects.toMatchObject({ status: 429 });
    await expectNothingHeld();
  });
});

describe('upstream usage is trusted within reason', () => {
  async function charged(usage: Record<string, unknown>, stream: boolean): Promise<{ spend: number; events: Array<GatewayEvents['usage.implausible']> }> {
    const { id, key } = await createKey({ name: `usage-${Math.random()}`, budget: 1e12 });
    const events: Array<GatewayEvents['usage.implausible']> = [];
    const stop = tg.gateway.bus.on('usage.implausible', (event) => events.push(event));
    try {
      upstream.enqueue({ kind: 'usage', usage });
      const client = clientFor(key);
      if (stream) {
        const chunks = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5, stream: true, stream_options: { include_usage: true } });
        for await (const _chunk of chunks);
      } else {
        const completion = await client.chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 5 });
        expect(completion.choices[0]?.message.content).toBe('echo: hi');
      }
      await expectNothingHeld();
      return { spend: await spendOf(id), events };
    } finally {
      stop();
    }
  }

  it('charges a plausible amount for 1e300 tokens, and flags it', async () => {
    for (const stream of [false, true]) {
      const { spend, events } = await charged({ prompt_tokens: 1e300, completion_tokens: 1e300, total_tokens: 2e300 }, stream);
      expect(Number.isFinite(spend)).toBe(true);
      expect(events).toHaveLength(1);
      const [event] = events;
      expect(event).toMatchObject({ provider: 'openai', model: 'priced-model', reported: { promptTokens: 1e300, completionTokens: 1e300 } });
      // The prompt cannot be more than the largest context window (plus a few bytes' worth); output at most the ceiling.
      expect(event?.charged.promptTokens).toBeLessThan(10_001_000);
      expect(event?.charged.completionTokens).toBeLessThanOrEqual(262_144);
      expect(spend).toBe((event?.charged.promptTokens ?? 0) + (event?.charged.completionTokens ?? 0));
    }
  });

  it('counts for itself when a count is negative, fractional or not a number', async () => {
    for (const usage of [
      { prompt_tokens: -5, completion_tokens: -7, total_tokens: -12 },
      { prompt_tokens: 8.5, completion_tokens: 2, total_tokens: 10.5 },
      { prompt_tokens: 'many', completion_tokens: 2, total_tokens: 2 },
      { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10, prompt_tokens_details: { cached_tokens: -1e300 } },
    ]) {
      const { spend, events } = await charged(usage, false);
      expect(events, JSON.stringify(usage)).toHaveLength(1);
      // "hi" is a handful of prompt tokens by the gateway's own count; "echo: hi" 2 or 3 answer tokens.
      expect(spend).toBeGreaterThan(0);
      expect(spend).toBeLessThan(30);
    }
  });

  it('charges plausible usage as reported, without a flag', async () => {
    const { spend, events } = await charged({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 }, false);
    expect(events).toHaveLength(0);
    expect(spend).toBe(11);
  });
});
