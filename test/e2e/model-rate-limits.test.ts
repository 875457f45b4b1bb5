import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GatewayEvents } from '../../src/core/events.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';

/**
 * A key's per-model limit (`model_rate_limits`) holds for the model actually called, however the request gets
 * there: a route's target, a fallback the request names, a routing rule's destination, as for a direct call. A
 * target over its limit is not called; the request moves on to the next candidate, or gets a 429 when none is
 * left. Each test makes its own key, so each starts with empty windows (a minute is longer than any test).
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { initial_delay_ms: 1, max_delay_ms: 5 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } },
    routes: {
      smart: { targets: [{ model: 'openai/gpt-4o' }], fallbacks: ['openai/gpt-4o-mini'] },
      'smart-only': { targets: [{ model: 'openai/gpt-4o' }] },
    },
    routing_rules: [{ name: 'big-tier', when: { metadata: { tier: 'big' } }, route_to: 'openai/gpt-4o' }],
  });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});
beforeEach(() => upstream.reset());

const { createKey, clientFor } = gatewayApi(() => tg.url);
const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

/** A key allowed one request a minute on openai/gpt-4o (and no other limit). */
async function limitedKey(name: string, limits: Record<string, number> = { 'openai/gpt-4o': 1 }): Promise<string> {
  return (await createKey({ name, budget: null, rate_limit: null, models: [], model_rate_limits: limits })).key;
}

/** How many calls the upstream saw for a model. */
function callsTo(model: string): number {
  return upstream.calls.filter((call) => call.body?.model === model).length;
}

async function rejection(request: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const error = await request.then(
    () => null,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(OpenAI.APIError);
  return error as InstanceType<typeof OpenAI.APIError>;
}

function expectModelLimit429(error: InstanceType<typeof OpenAI.APIError>): void {
  expect(error).toBeInstanceOf(OpenAI.RateLimitError);
  expect(error.code).toBe('rate_limit_exceeded');
  expect(error.message).toMatch(/openai\/gpt-4o/);
  const retryAfter = Number(error.headers?.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(error.headers?.get('x-ratelimit-limit-requests')).toBe('1');
  expect(error.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
  expect(error.headers?.get('x-ratelimit-reset-requests')).toMatch(/^\d+(\.\d+)?(ms|s)$|^\d+m/);
}

describe('a per-model limit holds for the model actually called', () => {
  it('a route over a limited target moves on to its fallback, and the limited model is called once', async () => {
    const client = clientFor(await limitedKey('route-fallback'));
    const first = await client.chat.completions.create({ model: 'smart', messages: hi }).withResponse();
    expect(first.response.headers.get('x-tollgate-model')).toBe('gpt-4o');
    // The request counted against gpt-4o's window, and says so.
    expect(first.response.headers.get('x-ratelimit-limit-requests')).toBe('1');
    expect(first.response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const second = await client.chat.completions.create({ model: 'smart', messages: hi }).withResponse();
    expect(second.data.choices[0]?.message.content).toBe('echo: hi');
    expect(second.response.headers.get('x-tollgate-model')).toBe('gpt-4o-mini');
    expect(second.response.headers.get('x-tollgate-fallback')).toBe('true');
    expect(callsTo('gpt-4o')).toBe(1);
    expect(callsTo('gpt-4o-mini')).toBe(1);
  });

  it('a route whose only target is over its limit answers 429 with the model window’s headers, and emits ratelimit.exceeded', async () => {
    const events: Array<GatewayEvents['ratelimit.exceeded']> = [];
    const off = tg.gateway.bus.on('ratelimit.exceeded', (event) => events.push(event));
    try {
      const client = clientFor(await limitedKey('route-only'));
      await client.chat.completions.create({ model: 'smart-only', messages: hi });
      expectModelLimit429(await rejection(client.chat.completions.create({ model: 'smart-only', messages: hi })));
      // Streaming too: refused before anything is sent.
      expectModelLimit429(await rejection(client.chat.completions.create({ model: 'smart-only', messages: hi, stream: true })));
      expect(callsTo('gpt-4o')).toBe(1);
      expect(events.map((event) => [event.scope, event.unit, event.limit])).toEqual([
        ['key_model', 'requests', 1],
        ['key_model', 'requests', 1],
      ]);
    } finally {
      off();
    }
  });

  it('a fallback the request names is not called over its limit', async () => {
    const client = clientFor(await limitedKey('request-fallbacks'));
    const body = { model: 'openai/error-503', messages: hi, fallbacks: ['openai/gpt-4o'] };
    const first = await client.chat.completions.create(body as never).withResponse();
    expect(first.response.headers.get('x-tollgate-model')).toBe('gpt-4o');
    // The primary fails again; the fallback is over its limit, so the request ends with the primary's error.
    const error = await rejection(client.chat.completions.create(body as never));
    expect(error.status).toBe(503);
    expect(callsTo('gpt-4o')).toBe(1);
  });

  it('a direct call with fallbacks of its own moves on to them when its model is over the limit', async () => {
    const client = clientFor(await limitedKey('direct-with-fallbacks'));
    const body = { model: 'openai/gpt-4o', messages: hi, fallbacks: ['openai/gpt-4o-mini'] };
    await client.chat.completions.create(body as never);
    const second = await client.chat.completions.create(body as never).withResponse();
    expect(second.response.headers.get('x-tollgate-model')).toBe('gpt-4o-mini');
    expect(callsTo('gpt-4o')).toBe(1);
    expect(callsTo('gpt-4o-mini')).toBe(1);
  });

  it('a routing rule that redirects to a limited model is held to its limit', async () => {
    const client = clientFor(await limitedKey('rule-redirect'));
    const body = { model: 'openai/gpt-4o-mini', messages: hi, metadata: { tier: 'big' } };
    const first = await client.chat.completions.create(body).withResponse();
    expect(first.response.headers.get('x-tollgate-routing-rule')).toBe('big-tier');
    expect(first.response.headers.get('x-tollgate-model')).toBe('gpt-4o');
    expectModelLimit429(await rejection(client.chat.completions.create(body)));
    expect(callsTo('gpt-4o')).toBe(1);
    expect(callsTo('gpt-4o-mini')).toBe(0);
  });

  it('a bare name in the key’s limits holds for the model a route reaches', async () => {
    const client = clientFor(await limitedKey('bare-name', { 'gpt-4o': 1 }));
    await client.chat.completions.create({ model: 'smart-only', messages: hi });
    expectModelLimit429(await rejection(client.chat.completions.create({ model: 'smart-only', messages: hi })));
    expect(callsTo('gpt-4o')).toBe(1);
  });

  it('a retry of the same target within one request counts once', async () => {
    const client = clientFor(await limitedKey('retry-once', { 'openai/gpt-4o': 2 }));
    // The first call fails with a 503; the route's only target is retried and answers.
    upstream.enqueue({ kind: 'error', status: 503 });
    const first = await client.chat.completions.create({ model: 'smart-only', messages: hi }).withResponse();
    expect(first.response.headers.get('x-tollgate-attempts')).toBe('2');
    expect(first.response.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    await client.chat.completions.create({ model: 'smart-only', messages: hi });
    const error = await rejection(client.chat.completions.create({ model: 'smart-only', messages: hi }));
    expect(error.status).toBe(429);
    expect(callsTo('gpt-4o')).toBe(3);
  });

  it('answers the 429 in the Anthropic shape on /anthropic', async () => {
    const key = await limitedKey('anthropic-shape');
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const body = { model: 'smart-only', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hi' }] };
    await anthropic.messages.create(body);
    const error = await anthropic.messages.create(body).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Anthropic.RateLimitError);
    const limited = error as InstanceType<typeof Anthropic.RateLimitError>;
    expect(limited.error).toMatchObject({ type: 'error', error: { type: 'rate_limit_error' } });
    expect(Number(limited.headers?.get('retry-after'))).toBeGreaterThan(0);
    expect(limited.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(callsTo('gpt-4o')).toBe(1);
  });
});

describe('direct calls, as before', () => {
  it('refuses the second direct call in the window at once, with the same headers', async () => {
    const client = clientFor(await limitedKey('direct'));
    const first = await client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi }).withResponse();
    expect(first.response.headers.get('x-ratelimit-limit-requests')).toBe('1');
    expect(first.response.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const error = await rejection(client.chat.completions.create({ model: 'openai/gpt-4o', messages: hi }));
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    expect(error.code).toBe('rate_limit_exceeded');
    expect(error.message).toMatch(/Rate limit reached for key 'direct': limit 1 requests per minute\. Try again in /);
    expect(error.headers?.get('x-ratelimit-limit-requests')).toBe('1');
    expect(error.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(Number(error.headers?.get('retry-after'))).toBeGreaterThan(0);
    // Other models are not limited by it.
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: hi });
    expect(callsTo('gpt-4o')).toBe(1);
  });
});

describe('the 429 in the Gemini shape', () => {
  it('answers on /genai as Gemini does, with the headers', async () => {
    const key = await limitedKey('gemini-shape');
    const call = (): Promise<Response> =>
      fetch(`${tg.url}/genai/v1beta/models/smart-only:generateContent`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-goog-api-key': key },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
      });
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ error: { code: 429, status: 'RESOURCE_EXHAUSTED' } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(callsTo('gpt-4o')).toBe(1);
  });
});
