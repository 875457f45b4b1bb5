import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, until, type Receiver } from '../helpers/alert-receiver.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

// A budget rule fires when "a key's or team's spend crosses 50, 80 or 100% of its budget". An operator switching a
// key's budget_period to `total` makes its spend the key's lifetime spend at once: past the budget, the key is
// refused from then on, yet no `budget.threshold` was announced (only a charge and a changed budget were), and no
// charge can cross a line the spend is already past: the alert never fired. (A team keeps its period's spend when
// its period changes: no team has a lifetime spend to switch to.)

/** $1 per output token, input free: "echo: hi" (2 tokens) costs exactly $2. */
const PRICES = { 'priced-model': { input_per_mtok: 0, output_per_mtok: 1_000_000 } };
const DAY = 24 * 60 * 60 * 1000;

let upstream: ScriptedUpstream;
let receiver: Receiver;
let tg: RunningGateway;
let now = Date.UTC(2026, 10, 2, 12);
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream' });
  receiver = await startReceiver();
  tg = await startGateway(
    {
      providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: PRICES } },
      alerts: { channels: { ops: { type: 'webhook', url: receiver.url } }, rules: [{ name: 'spent', kind: 'budget', thresholds: [100], cooldown_ms: 0 }] },
    },
    {},
    { clock: () => now },
  );
});
afterAll(async () => {
  await tg?.stop();
  await receiver?.close();
  await upstream?.close();
});

const charge = (key: string) => clientFor(key).chat.completions.create({ model: 'openai/priced-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });

describe("a key's budget period switched to total", () => {
  it('fires the threshold its lifetime spend is past, as a charge crossing it would', async () => {
    const { id, key } = await createKey({ name: 'daily', budget: 10, budget_period: 'daily', rate_limit: null, models: [] });
    for (let i = 0; i < 3; i++) await charge(key);
    // The next day: $0 of today's $10, $6 in all.
    now += DAY;
    for (let i = 0; i < 2; i++) await charge(key);
    const before = await api('GET', `/api/keys/${id}`);
    expect(before.body).toMatchObject({ spend: 4, total_spend: 10 });

    const patched = await api('PATCH', `/api/keys/${id}`, { budget_period: 'total' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ budget_period: 'total', spend: 10, budget: 10 });
    // The key is spent: refused from now on.
    const refused = (await charge(key).catch((err: unknown) => err)) as { status?: number };
    expect(refused.status).toBeGreaterThanOrEqual(400);

    const firing = await until('the budget alert', () => receiver.deliveries.find((d) => d.json.rule === 'spent'), 4_000);
    expect(firing.json).toMatchObject({ status: 'firing', event: 'budget.threshold', subject: { key: id }, details: { threshold: 100, budget: 10, spend: 10 } });
  });
});
