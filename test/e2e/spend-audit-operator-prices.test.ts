import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startAnthropicUpstream, WEB_SEARCH_TOOL, type AnthropicUpstream } from '../upstream/anthropic-upstream.js';

/**
 * An operator's `prices` entry can price what the catalogue prices for Claude: writes to the 1-hour cache apart from
 * the 5-minute ones (Anthropic bills them at 2x and 1.25x the input price) with `cache_write_1h_per_mtok`, and the web
 * search tool's searches with `web_search_per_1k`. Before, the entry had one cache-write rate for both lifetimes and no
 * per-search rate (such a config was refused as having unknown fields).
 */
const MODEL = 'claude-sonnet-4-5';
const PRICE = { input_per_mtok: 4, output_per_mtok: 20, cached_input_per_mtok: 0.4, cache_write_per_mtok: 5, cache_write_1h_per_mtok: 8, web_search_per_1k: 12 };
const READ = 500;
const FIVE_MINUTE = 1_000;
const ONE_HOUR = 3_000;

let upstream: AnthropicUpstream;
let tg: RunningGateway;
const { api, createKey } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startAnthropicUpstream({ apiKey: 'sk-ant-upstream' });
  tg = await startGateway({
    settings: { routing: { retry: { max_attempts: 1 }, breaker: { enabled: false } } },
    providers: { anthropic: { base_url: upstream.url, api_key: 'sk-ant-upstream', prices: { [MODEL]: PRICE } } },
  });
  upstream.setCacheTokens(READ, FIVE_MINUTE, ONE_HOUR);
});
afterAll(async () => {
  await tg?.stop();
  await upstream?.close();
});

/** The hand computation from the operator's rates and Anthropic's usage (its input_tokens leave the cache out). */
function expectedCost(usage: Anthropic.Usage): number {
  const tokens =
    usage.input_tokens * PRICE.input_per_mtok +
    READ * PRICE.cached_input_per_mtok +
    FIVE_MINUTE * PRICE.cache_write_per_mtok +
    ONE_HOUR * PRICE.cache_write_1h_per_mtok +
    usage.output_tokens * PRICE.output_per_mtok;
  return tokens / 1e6 + ((usage.server_tool_use?.web_search_requests ?? 0) * PRICE.web_search_per_1k) / 1e3;
}

/** The key's spend and its one logged request's cost. */
async function charged(keyId: string): Promise<{ spend: number; logged: number }> {
  let logged: Array<Record<string, number>> = [];
  for (const deadline = Date.now() + 5_000; logged.length === 0 && Date.now() < deadline; ) {
    logged = (await api('GET', `/api/logs?key_id=${keyId}`)).body.data;
    if (logged.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(logged).toHaveLength(1);
  return { spend: (await api('GET', `/api/keys/${keyId}`)).body.spend, logged: logged[0]?.cost_usd as number };
}

describe("an operator's prices entry", () => {
  it('prices 1-hour cache writes at cache_write_1h_per_mtok and searches at web_search_per_1k', async () => {
    const key = await createKey({ name: 'operator-prices' });
    const client = new Anthropic({ baseURL: `${tg.url}/anthropic`, apiKey: key.key, maxRetries: 0 });
    const message = await client.messages.create({
      model: `anthropic/${MODEL}`,
      max_tokens: 300,
      tools: [{ type: WEB_SEARCH_TOOL, name: 'web_search', max_uses: 3 }],
      messages: [{ role: 'user', content: 'search the web for tollgate' }],
    });
    expect(message.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: FIVE_MINUTE, ephemeral_1h_input_tokens: ONE_HOUR });
    expect(message.usage.server_tool_use?.web_search_requests).toBe(1);
    const expected = expectedCost(message.usage);
    const { spend, logged } = await charged(key.id);
    expect(logged).toBeCloseTo(expected, 9);
    expect(spend).toBeCloseTo(expected, 9);
  });

  it('shows the dearest prompt-token rate, the 1-hour write rate, as the billed input price', async () => {
    const listed = (await api('GET', `/api/models?provider=anthropic&search=${MODEL}`)).body.data as Array<{ model: string; pricing: { input_per_mtok: number } | null }>;
    expect(listed.find((entry) => entry.model === MODEL)?.pricing?.input_per_mtok).toBe(PRICE.cache_write_1h_per_mtok);
  });
});
