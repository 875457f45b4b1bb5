import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Perplexity's Sonar, Sonar Pro and Sonar Reasoning Pro charge a fee per request beside their tokens, and the fee
 * depends on the search context size the request ran at (docs.perplexity.ai pricing: "Total cost per query = Token
 * costs + Request fee (varies by search context size)"; per 1,000 requests, low / medium / high: Sonar $5 / $8 / $12,
 * Sonar Pro and Sonar Reasoning Pro $6 / $10 / $14). Since July 2025 the answer's usage states what the request fee
 * was (`cost.request_cost`, "includes pro search cost if applicable"). The bundled catalogue lists only the high fee,
 * so every request used to be charged as a high-context one.
 * The usages below are the ones Perplexity's own pages show (the pricing page's Sonar example, the changelog's
 * Sonar Pro answer); the gateway runs a `perplexity` provider against the scripted OpenAI upstream.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'pplx-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { perplexity: { base_url: `${upstream.url}/v1`, api_key: 'pplx-upstream' } },
  });
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** Sends one answer with the given usage and returns what the key was charged and what the request log holds. */
async function charged(model: string, usage: Record<string, unknown>): Promise<{ spend: number; logged: number | undefined }> {
  const key = await createKey({ name: `fee-${model}-${Math.random().toString(36).slice(2, 8)}` });
  upstream.enqueue({ kind: 'usage', usage });
  await clientFor(key.key).chat.completions.create({ model: `perplexity/${model}`, messages: [{ role: 'user', content: 'what is new' }] });
  const spend = (await api('GET', `/api/keys/${key.id}`)).body.spend as number;
  let logged: Array<Record<string, number>> = [];
  for (const deadline = Date.now() + 5_000; logged.length === 0 && Date.now() < deadline; ) {
    logged = (await api('GET', `/api/logs?key_id=${key.id}`)).body.data;
    if (logged.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { spend, logged: logged[0]?.cost_usd };
}

describe('the request fee of a Perplexity answer', () => {
  it('is the low-context fee for a low-context Sonar answer (the pricing page example: $0.0057)', async () => {
    const usage = {
      prompt_tokens: 500,
      completion_tokens: 200,
      total_tokens: 700,
      search_context_size: 'low',
      cost: { input_tokens_cost: 0.0005, output_tokens_cost: 0.0002, request_cost: 0.005, total_cost: 0.0057 },
    };
    const { spend, logged } = await charged('sonar', usage);
    expect(spend).toBeCloseTo(0.0057, 9);
    expect(logged).toBeCloseTo(0.0057, 9);
  });

  it('is the low-context fee for a low-context Sonar Pro answer (the changelog example: $0.012609)', async () => {
    const usage = {
      prompt_tokens: 8,
      completion_tokens: 439,
      total_tokens: 447,
      search_context_size: 'low',
      cost: { input_tokens_cost: 2.4e-5, output_tokens_cost: 0.006585, request_cost: 0.006, total_cost: 0.012609 },
    };
    const { spend, logged } = await charged('sonar-pro', usage);
    expect(spend).toBeCloseTo(0.012609, 9);
    expect(logged).toBeCloseTo(0.012609, 9);
  });

  it('is the medium-context fee for a medium-context Sonar Reasoning Pro answer ($10 per 1,000)', async () => {
    const usage = {
      prompt_tokens: 1000,
      completion_tokens: 2000,
      total_tokens: 3000,
      search_context_size: 'medium',
      cost: { input_tokens_cost: 0.002, output_tokens_cost: 0.016, request_cost: 0.01, total_cost: 0.028 },
    };
    const expected = (1000 * 2 + 2000 * 8) / 1e6 + 10 / 1e3;
    const { spend, logged } = await charged('sonar-reasoning-pro', usage);
    expect(spend).toBeCloseTo(expected, 9);
    expect(logged).toBeCloseTo(expected, 9);
  });

  it("takes the fee Perplexity states it charged, a Pro Search's included", async () => {
    // A Sonar Pro request with Pro Search at medium context: the stated request cost is above the plain medium fee.
    const usage = {
      prompt_tokens: 20,
      completion_tokens: 300,
      total_tokens: 320,
      search_context_size: 'medium',
      cost: { input_tokens_cost: 6e-5, output_tokens_cost: 0.0045, request_cost: 0.018, total_cost: 0.02256 },
    };
    const { spend, logged } = await charged('sonar-pro', usage);
    expect(spend).toBeCloseTo(0.02256, 9);
    expect(logged).toBeCloseTo(0.02256, 9);
  });
});
