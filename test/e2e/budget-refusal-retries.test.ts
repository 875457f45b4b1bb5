import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A spent budget is refused with 429 and a retry-after until the period resets: hours for a daily budget, weeks
// for a monthly one. The OpenAI and Anthropic SDKs retry a 429 by default and sleep whatever retry-after says
// (OpenAI's without any cap, Anthropic's up to 2^31-1 ms), so a client with default settings hung until the
// budget's reset instead of getting the error. The gateway's clock stands at noon, twelve hours before a reset.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const now = Date.parse('2028-03-15T12:00:00.000Z');
const PRICES = { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway(
    {
      settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
    },
    {},
    { clock: () => now },
  );
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** A key whose daily budget ($0) is spent: every request it makes is refused until midnight UTC. */
async function spentKey(name: string): Promise<string> {
  const created = await jsonRequest(tg.url, 'POST', '/api/keys', { name, budget: 0, budget_period: 'daily' });
  expect(created.status).toBe(201);
  return created.body.key as string;
}

/** What the call ended with within `ms`: its error's status, or 'still waiting' when the client was still retrying. */
async function within(ms: number, call: Promise<unknown>): Promise<number | 'answered' | 'still waiting'> {
  const outcome = call.then(
    () => 'answered' as const,
    (err: unknown) => (err as { status: number }).status,
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still waiting'>((resolve) => (timer = setTimeout(() => resolve('still waiting'), ms)));
  try {
    return await Promise.race([outcome, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a spent budget with the SDKs’ default retries', () => {
  it('the OpenAI and Anthropic SDKs get the 429 at once, asked once, instead of sleeping until the budget resets', async () => {
    const refusals: string[] = [];
    tg.gateway.bus.on('budget.exceeded', (event) => refusals.push(event.requestId));

    // Default maxRetries (2), as a client would have it.
    const openai = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: await spentKey('openai-client'), timeout: 15_000 });
    const openaiCall = openai.chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    expect(await within(5_000, openaiCall)).toBe(429);
    expect(refusals).toHaveLength(1);

    const anthropic = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: await spentKey('anthropic-client'), timeout: 15_000 });
    const anthropicCall = anthropic.messages.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
    expect(await within(5_000, anthropicCall)).toBe(429);
    expect(refusals).toHaveLength(2);
    expect(upstream.calls).toHaveLength(0);
  });

  it('still says when the budget resets (retry-after), and that retrying sooner is pointless (x-should-retry: false)', async () => {
    const response = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await spentKey('raw-client')}` },
      body: JSON.stringify({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 }),
    });
    expect(response.status).toBe(429);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('budget_exceeded');
    expect(response.headers.get('retry-after')).toBe(String(12 * 3600));
    expect(response.headers.get('x-should-retry')).toBe('false');
  });
});
