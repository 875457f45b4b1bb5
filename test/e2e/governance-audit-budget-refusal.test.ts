import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * README: a budget refusal says "retry soon" (`retry-after: 2`, `x-should-retry: true`) only when the request is
 * refused because requests in flight hold the money. When the key's budget is short only for its requests in flight
 * but its team's budget cannot cover the request at all (spent until the period resets), no retry can pass: the
 * answer must be the team's refusal, `x-should-retry: false`. It was the key's "retry when they end", which the
 * OpenAI and Anthropic SDKs retry (twice by default), each retry refused again. And when both budgets are spent,
 * retry-after must say when the later of the two resets: it said when the key's did, and a client retrying then was
 * refused by the team's until its own period ended.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
/** The gateway's clock (budget periods): mid-month, mid-day. */
let now = Date.parse('2027-06-14T12:00:00.000Z');

/** $1 per output token, input free. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } } }, {}, { clock: () => now });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

const { api, createKey, clientFor } = gatewayApi(() => tg.url);
const hi: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'hi' }];

describe("a key short only for its requests in flight, in a team whose budget cannot cover the request", () => {
  it("is refused with the team's refusal, which no retry can pass (x-should-retry: false)", async () => {
    const team = await api('POST', '/api/teams', { name: 'budget-team', budget: 10, budget_period: 'daily' });
    expect(team.status).toBe(201);
    const other = await createKey({ name: 'other', team: team.body.id });
    const own = await createKey({ name: 'own', team: team.body.id, budget: 3, budget_period: 'daily' });

    // The team spends $9 of its $10 through the other key.
    upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 1, completion_tokens: 9, total_tokens: 10 } });
    await clientFor(other.key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 9 });
    expect((await api('GET', `/api/teams/${team.body.id}`)).body.spend).toBe(9);

    // A request of the key holds $1 (of the key's $3 and of the team's last $1) while it runs.
    upstream.enqueue({ kind: 'slow-headers', delayMs: 1_500 });
    const inFlight = clientFor(own.key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 1 });
    for (let i = 0; i < 200 && upstream.calls.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(upstream.calls.length).toBe(2);

    // Up to $3: the key could pay it once the $1 is settled; the team ($9 spent of $10) never can this period.
    const refused = await clientFor(own.key)
      .chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 3 })
      .then(
        () => null,
        (err: unknown) => err as InstanceType<typeof OpenAI.APIError>,
      );
    await inFlight;
    expect(refused).toMatchObject({ status: 429, code: 'budget_exceeded' });
    expect(refused?.headers?.get('x-should-retry')).toBe('false');
    expect(Number(refused?.headers?.get('retry-after'))).toBeGreaterThan(2);
    expect(refused?.message).toContain("team 'budget-team'");
    expect(refused?.message).not.toContain('retry when they end');
  });

  it("both budgets spent: retry-after waits for the one that resets last (the team's month, not the key's day)", async () => {
    const team = await api('POST', '/api/teams', { name: 'monthly-team', budget: 2, budget_period: 'monthly' });
    expect(team.status).toBe(201);
    const key = await createKey({ name: 'daily-key', team: team.body.id, budget: 2, budget_period: 'daily' });
    upstream.enqueue({ kind: 'usage', usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } });
    await clientFor(key.key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 2 });

    const refused = await clientFor(key.key)
      .chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 1 })
      .then(
        () => null,
        (err: unknown) => err as InstanceType<typeof OpenAI.APIError>,
      );
    expect(refused).toMatchObject({ status: 429, code: 'budget_exceeded' });
    expect(refused?.headers?.get('x-should-retry')).toBe('false');
    // The key's day ends at 2027-06-15T00:00Z (12 hours); the team's month at 2027-07-01T00:00Z.
    expect(Number(refused?.headers?.get('retry-after'))).toBe((Date.parse('2027-07-01T00:00:00.000Z') - now) / 1000);
    expect(refused?.message).toContain("team 'monthly-team'");

    // Retried when the key's day is over: still refused, the team's month is not.
    now = Date.parse('2027-06-15T00:00:01.000Z');
    await expect(clientFor(key.key).chat.completions.create({ model: 'openai/priced-model', messages: hi, max_tokens: 1 })).rejects.toMatchObject({
      status: 429,
      code: 'budget_exceeded',
    });
  });
});
