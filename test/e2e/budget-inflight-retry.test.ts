import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * A budget refused only because requests in flight hold its money (their reservations, settled to their real and
 * usually far smaller cost when they end) was answered as a spent budget: retry-after until the period resets (a
 * day, a month) and x-should-retry: false, so the SDKs gave up at once, while the same request a second later passed.
 * It now says that a retry soon may pass: a short retry-after, x-should-retry: true, and why in the message.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
/** $1 a token, in and out: a budget in dollars reads as tokens. */
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

/** A monthly $10,000 key: room for two requests of max_tokens 4000 at once, not three. */
async function monthlyKey(): Promise<string> {
  const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'in-flight', budget: 10_000, budget_period: 'monthly' });
  expect(created.status).toBe(201);
  return created.body.key as string;
}

const body = { model: 'openai/priced-model', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 4000 };

/** Two slow requests of `key` in flight, holding $4,000 and some each until they end (about 1.5 s). */
async function twoInFlight(key: string): Promise<Array<Promise<Response>>> {
  upstream.reset();
  upstream.enqueue({ kind: 'slow-headers', delayMs: 1_500 }, { kind: 'slow-headers', delayMs: 1_500 });
  const send = (): Promise<Response> =>
    fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
  const calls = [send(), send()];
  // Both are admitted (reserved) once the upstream has them.
  const deadline = Date.now() + 5_000;
  while (upstream.calls.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(upstream.calls).toHaveLength(2);
  return calls;
}

describe('a budget refusal caused only by requests in flight', () => {
  it('says a retry soon may pass: a short retry-after, x-should-retry: true, and why', async () => {
    const key = await monthlyKey();
    const inFlight = await twoInFlight(key);
    const refused = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(body),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-should-retry')).toBe('true');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(5);
    const error = ((await refused.json()) as { error: { message: string } }).error;
    expect(error.message).toMatch(/held by requests in flight: retry when they end/);
    expect(error.message).not.toMatch(/resets at/);
    for (const call of await Promise.all(inFlight)) expect(call.status).toBe(200);
  });

  it('is retried by the OpenAI and Anthropic SDKs with their default retries, and passes once the others end', async () => {
    const openaiKey = await monthlyKey();
    const openai = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: openaiKey, timeout: 15_000 });
    const openaiOthers = await twoInFlight(openaiKey);
    const answer = await openai.chat.completions.create(body);
    expect(answer.choices).toHaveLength(1);
    await Promise.all(openaiOthers);

    const anthropicKey = await monthlyKey();
    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: anthropicKey, timeout: 15_000 });
    const anthropicOthers = await twoInFlight(anthropicKey);
    const message = await anthropic.messages.create(body);
    expect(message.type).toBe('message');
    await Promise.all(anthropicOthers);
  }, 20_000);

  it('a budget spent for good is still refused with x-should-retry: false until it resets', async () => {
    const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name: 'spent', budget: 100, budget_period: 'monthly' });
    const refused = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${created.body.key as string}` },
      body: JSON.stringify(body),
    });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-should-retry')).toBe('false');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
  });
});
