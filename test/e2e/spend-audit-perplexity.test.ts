import { calcPrice } from '@pydantic/genai-prices';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * Perplexity's Sonar Deep Research bills three meters beside prompt and completion tokens, reported at the top level
 * of `usage` (docs.perplexity.ai pricing; the chat completion's UsageInfo): citation tokens (part of the input, "Input
 * tokens comprise of Prompt tokens + Citation tokens"), reasoning tokens ("a distinct step", at their own rate) and
 * search queries (per thousand). total_tokens is prompt + completion only. The usage below has that documented shape,
 * `cost` breakdown included; the expected charge is worked out by hand from the bundled catalogue's prices.
 */
const DEEP_RESEARCH_USAGE = {
  prompt_tokens: 19,
  completion_tokens: 7163,
  total_tokens: 7182,
  citation_tokens: 10175,
  num_search_queries: 24,
  reasoning_tokens: 144826,
  search_context_size: 'low',
  cost: {
    input_tokens_cost: 0.00004,
    output_tokens_cost: 0.0573,
    reasoning_tokens_cost: 0.43448,
    citation_tokens_cost: 0.02035,
    search_queries_cost: 0.12,
    total_cost: 0.63217,
  },
};

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

/** The catalogue's rates for the model: USD per million tokens, per thousand searches. */
function catalogueRates(): Record<string, number> {
  const found = calcPrice({}, 'sonar-deep-research', { providerId: 'perplexity' });
  if (!found) throw new Error('the catalogue has no price for sonar-deep-research');
  return found.model.prices as Record<string, number>;
}

async function metric(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const text = await (await fetch(`${tg.url}/metrics`)).text();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (wanted.every((pair) => line.includes(pair))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe('a Sonar Deep Research answer', () => {
  it('is charged its citation tokens, reasoning tokens and searches at the catalogue rates', async () => {
    const rates = catalogueRates();
    const u = DEEP_RESEARCH_USAGE;
    // Prompt and citations at the input rate, the answer at the output rate, reasoning at its own, searches per thousand.
    const expected =
      ((u.prompt_tokens + u.citation_tokens) * (rates.input_mtok as number) +
        u.completion_tokens * (rates.output_mtok as number) +
        u.reasoning_tokens * (rates.output_reasoning_mtok as number)) /
        1e6 +
      (u.num_search_queries * (rates.web_searches_kcount as number)) / 1e3;

    const key = await createKey({ name: 'deep-research' });
    upstream.enqueue({ kind: 'usage', usage: DEEP_RESEARCH_USAGE });
    const completion = await clientFor(key.key).chat.completions.create({ model: 'perplexity/sonar-deep-research', messages: [{ role: 'user', content: 'research this' }] });
    // The client sees Perplexity's usage as Perplexity wrote it.
    expect(completion.usage).toMatchObject({ prompt_tokens: 19, completion_tokens: 7163, total_tokens: 7182 });

    expect((await api('GET', `/api/keys/${key.id}`)).body.spend).toBeCloseTo(expected, 9);
    let logged: Array<Record<string, number>> = [];
    for (const deadline = Date.now() + 5_000; logged.length === 0 && Date.now() < deadline; ) {
      logged = (await api('GET', `/api/logs?key_id=${key.id}`)).body.data;
      if (logged.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(logged[0]).toMatchObject({
      prompt_tokens: u.prompt_tokens + u.citation_tokens,
      completion_tokens: u.completion_tokens + u.reasoning_tokens,
      reasoning_tokens: u.reasoning_tokens,
    });
    expect(logged[0]?.cost_usd).toBeCloseTo(expected, 9);
    expect(await metric('tollgate_cost_usd_total', { provider: 'perplexity' })).toBeCloseTo(expected, 9);
  });
});
