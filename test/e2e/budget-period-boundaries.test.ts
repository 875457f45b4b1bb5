import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigInput } from '../../src/config/schema.js';
import { jsonRequest } from '../helpers/api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// Budget periods turn and keys expire on the gateway's clock (GatewayOptions.clock), as rate-limit windows do: the
// test moves it to the last millisecond of a period and to the first of the next, across month ends, a leap day and
// a restart, instead of waiting for real midnights.

let upstream: ScriptedUpstream;
let tg: RunningGateway;
let now = Date.parse('2028-01-31T12:00:00.000Z');
const dataDir = mkdtempSync(join(tmpdir(), 'tollgate-periods-'));
/** $1 a token, so one answer of 100 tokens spends a $100 budget. */
const PRICES = { 'priced-model': { input_per_mtok: 1_000_000, output_per_mtok: 1_000_000 } };
let config: ConfigInput;

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  config = {
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
  };
  tg = await startGateway(config, {}, { clock: () => now, dataDir });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
  rmSync(dataDir, { recursive: true, force: true });
});
beforeEach(() => upstream.reset());

const api = (method: string, path: string, body?: unknown) => jsonRequest(tg.url, method, path, body);

/** One chat completion whose upstream reports `tokens` output tokens; the status the client got. */
async function call(key: string, tokens: number): Promise<number> {
  upstream.setMode({ kind: 'usage', usage: { prompt_tokens: 0, completion_tokens: tokens, total_tokens: tokens } });
  const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
  try {
    await client.chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
    return 200;
  } catch (err) {
    return (err as { status: number }).status;
  }
}

describe('budget periods on the gateway clock', () => {
  it('a monthly budget resets at the first millisecond of the next UTC month: Jan 31 -> Feb, Feb 29 of a leap year -> Mar, across a restart', async () => {
    now = Date.parse('2028-01-31T12:00:00.000Z');
    const created = await api('POST', '/api/keys', { name: 'monthly', budget: 100, budget_period: 'monthly' });
    const { id, key } = created.body as { id: string; key: string };
    expect(await call(key, 100)).toBe(200);
    now = Date.parse('2028-01-31T23:59:59.999Z');
    expect(await call(key, 1)).toBe(429);
    now = Date.parse('2028-02-01T00:00:00.000Z');
    expect(await call(key, 100)).toBe(200);
    let view = (await api('GET', `/api/keys/${id}`)).body;
    expect(view).toMatchObject({ spend: 100, period_start: '2028-02-01T00:00:00.000Z', period_resets_at: '2028-03-01T00:00:00.000Z' });
    now = Date.parse('2028-02-29T23:59:59.999Z');
    const refused = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 }),
    });
    expect(refused.status).toBe(429);
    // retry-after counts to the reset on the same clock: 1 ms away, so 1 s.
    expect(refused.headers.get('retry-after')).toBe('1');

    // Stopped in February, started in March: the stored period has ended, so the spend is March's (none).
    await tg.stop();
    now = Date.parse('2028-03-01T00:00:00.000Z');
    tg = await startGateway(config, {}, { clock: () => now, dataDir });
    view = (await api('GET', `/api/keys/${id}`)).body;
    expect(view).toMatchObject({ spend: 0, requests: 0, period_start: '2028-03-01T00:00:00.000Z', period_resets_at: '2028-04-01T00:00:00.000Z', total_spend: 200 });
    expect(await call(key, 1)).toBe(200);
  });

  it('daily and weekly budgets reset at 00:00Z (weeks start on Monday)', async () => {
    now = Date.parse('2028-03-05T10:00:00.000Z'); // a Sunday
    const daily = (await api('POST', '/api/keys', { name: 'daily', budget: 100, budget_period: 'daily' })).body as { key: string };
    const weekly = (await api('POST', '/api/keys', { name: 'weekly', budget: 100, budget_period: 'weekly' })).body as { key: string };
    expect(await call(daily.key, 100)).toBe(200);
    expect(await call(weekly.key, 100)).toBe(200);
    now = Date.parse('2028-03-05T23:59:59.999Z');
    expect(await call(daily.key, 1)).toBe(429);
    expect(await call(weekly.key, 1)).toBe(429);
    now = Date.parse('2028-03-06T00:00:00.000Z'); // Monday
    expect(await call(daily.key, 100)).toBe(200);
    expect(await call(weekly.key, 100)).toBe(200);
    now = Date.parse('2028-03-12T23:59:59.999Z'); // the next Sunday
    expect(await call(weekly.key, 1)).toBe(429);
    now = Date.parse('2028-03-13T00:00:00.000Z');
    expect(await call(weekly.key, 1)).toBe(200);
  });

  it('a request that straddles a period boundary is charged to the period it ends in', async () => {
    now = Date.parse('2028-05-31T23:59:59.900Z');
    const { id, key } = (await api('POST', '/api/keys', { name: 'straddle', budget: 1000, budget_period: 'monthly' })).body as { id: string; key: string };
    upstream.setMode({ kind: 'slow-headers', delayMs: 300 });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: key, maxRetries: 0, timeout: 15_000 });
    const answer = client.chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    now = Date.parse('2028-06-01T00:00:00.100Z');
    await answer;
    const view = (await api('GET', `/api/keys/${id}`)).body as { spend: number; total_spend: number; requests: number; period_start: string };
    expect(view.period_start).toBe('2028-06-01T00:00:00.000Z');
    expect(view.spend).toBeGreaterThan(0);
    expect(view.spend).toBe(view.total_spend);
    expect(view.requests).toBe(1);
  });

  it('a key expires exactly at expires_at', async () => {
    now = Date.parse('2028-04-01T00:00:00.000Z');
    const { key } = (await api('POST', '/api/keys', { name: 'expiring', expires_at: '2028-04-01T00:00:01.000Z' })).body as { key: string };
    now = Date.parse('2028-04-01T00:00:00.999Z');
    expect(await call(key, 1)).toBe(200);
    now = Date.parse('2028-04-01T00:00:01.000Z');
    expect(await call(key, 1)).toBe(401);
  });
});
