import { calcPrice } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * OpenRouter states what it charged in the usage it answers with (openrouter.ai docs, usage accounting): `cost` in USD
 * credits, and for a request on the account's own provider key (`is_byok`) OpenRouter's fee only, the provider's charge
 * beside it in `cost_details.upstream_inference_cost`. That bill is what the request cost, where the catalogue's
 * per-model list price is an estimate (OpenRouter routes one model to providers at different prices, and its web plugin
 * bills results no token count shows) and knows no model newer than itself. The usage below has OpenRouter's shape.
 */
function openRouterUsage(cost: number, byok: { upstream: number } | null = null): Record<string, unknown> {
  return {
    prompt_tokens: 194,
    completion_tokens: 2,
    total_tokens: 196,
    cost,
    is_byok: byok !== null,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    cost_details: { upstream_inference_cost: byok?.upstream ?? null, upstream_inference_prompt_cost: 0, upstream_inference_completions_cost: 0 },
    completion_tokens_details: { reasoning_tokens: 0, image_tokens: 0 },
  };
}

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'or-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: {
      openrouter: { base_url: `${upstream.url}/v1`, api_key: 'or-upstream', prices: { 'acme/priced-here': { input_per_mtok: 1_000, output_per_mtok: 0 } } },
    },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

async function spendOf(keyId: string): Promise<number> {
  return (await api('GET', `/api/keys/${keyId}`)).body.spend;
}

async function loggedCosts(keyId: string, count: number): Promise<number[]> {
  let logged: Array<{ cost_usd: number }> = [];
  for (const deadline = Date.now() + 5_000; logged.length < count && Date.now() < deadline; ) {
    logged = (await api('GET', `/api/logs?key_id=${keyId}`)).body.data;
    if (logged.length < count) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return logged.map((entry) => entry.cost_usd).sort((a, b) => a - b);
}

describe("OpenRouter's usage.cost", () => {
  it('is what a request is charged, whole and streamed, over the catalogue and for a model the catalogue lacks', async () => {
    // The catalogue's price for these counts differs from the bill, so the charge shows which one counted.
    const listed = calcPrice({ input_tokens: 194, output_tokens: 2 }, 'openai/gpt-4o', { providerId: 'openrouter' })?.total_price;
    expect(listed).toBeGreaterThan(0);
    expect(listed).not.toBeCloseTo(0.0421, 6);

    const key = await createKey({ name: 'openrouter-bill' });
    const client = clientFor(key.key);
    upstream.enqueue({ kind: 'usage', usage: openRouterUsage(0.0421) });
    await client.chat.completions.create({ model: 'openrouter/openai/gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(await spendOf(key.id)).toBeCloseTo(0.0421, 9);

    upstream.enqueue({ kind: 'usage', usage: openRouterUsage(0.0007) });
    const stream = await client.chat.completions.create({ model: 'openrouter/openai/gpt-4o', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
    for await (const _chunk of stream) void _chunk;
    expect(await spendOf(key.id)).toBeCloseTo(0.0421 + 0.0007, 9);

    // A model no catalogue lists was free before: OpenRouter's bill prices it.
    upstream.enqueue({ kind: 'usage', usage: openRouterUsage(0.015) });
    await client.chat.completions.create({ model: 'openrouter/acme/brand-new-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(await spendOf(key.id)).toBeCloseTo(0.0421 + 0.0007 + 0.015, 9);
    expect(await loggedCosts(key.id, 3)).toEqual([0.0007, 0.015, 0.0421]);

    // The operator's own price for a model still comes first.
    const priced = await createKey({ name: 'openrouter-override' });
    upstream.enqueue({ kind: 'usage', usage: openRouterUsage(0.5) });
    await clientFor(priced.key).chat.completions.create({ model: 'openrouter/acme/priced-here', messages: [{ role: 'user', content: 'hi' }] });
    expect(await spendOf(priced.id)).toBeCloseTo((194 * 1_000) / 1e6, 9);
  });

  it("adds the provider's charge to OpenRouter's fee on the account's own key", async () => {
    const key = await createKey({ name: 'openrouter-byok' });
    upstream.enqueue({ kind: 'usage', usage: openRouterUsage(0.0001, { upstream: 0.002 }) });
    await clientFor(key.key).chat.completions.create({ model: 'openrouter/acme/brand-new-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(await spendOf(key.id)).toBeCloseTo(0.0021, 9);
  });

  it('is money, not a count: an OpenRouter usage is charged as reported, not flagged implausible', async () => {
    const flagged: unknown[] = [];
    const stop = tg.gateway.bus.on('usage.implausible', (event) => void flagged.push(event));
    try {
      const key = await createKey({ name: 'openrouter-plain' });
      upstream.enqueue({ kind: 'usage', usage: openRouterUsage(0.0421, { upstream: 0.0013 }) });
      await clientFor(key.key).chat.completions.create({ model: 'openrouter/acme/brand-new-model', messages: [{ role: 'user', content: 'hi' }] });
      expect(await loggedCosts(key.id, 1)).toHaveLength(1);
      expect(flagged).toEqual([]);
    } finally {
      stop();
    }
  });
});
