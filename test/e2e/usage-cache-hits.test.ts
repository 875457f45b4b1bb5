import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * An answer from the response cache was charged nothing and called no model: `/api/usage` counts it as a request with
 * no tokens and no spend, as `tollgate_tokens_total` and the budgets do. Counted with the stored answer's tokens, a
 * team's token chargeback read twice what its providers billed when half its requests were cache hits.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream' } }, cache: { mode: 'on' } });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

interface UsageTotal {
  group: string;
  requests: number;
  errors: number;
  spend_usd: number;
  input_tokens: number;
  output_tokens: number;
}

describe('GET /api/usage with response cache hits', () => {
  it('counts a cache hit as a request without tokens or spend, as the metrics do', async () => {
    const key = await createKey({ name: 'cached' });
    const client = clientFor(key.key);
    const body = { model: 'openai/gpt-4o-mini', messages: [{ role: 'user' as const, content: 'what is the capital of France?' }] };
    const first = await client.chat.completions.create(body).withResponse();
    expect(first.response.headers.get('x-tollgate-cache')).toBe('miss');
    const bought = first.data.usage;
    expect(bought?.prompt_tokens).toBeGreaterThan(0);

    // The answer is stored after the client got it: ask again until the cache serves it.
    let hits = 0;
    for (let i = 0; i < 100 && hits === 0; i++) {
      const again = await client.chat.completions.create(body).withResponse();
      if (again.response.headers.get('x-tollgate-cache') === 'hit-exact') {
        hits++;
        // The client still gets the stored answer's usage: only the accounting leaves it out.
        expect(again.data.usage).toEqual(bought);
      } else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(hits).toBe(1);
    expect(upstream.calls.length).toBeGreaterThanOrEqual(1);
    const bills = upstream.calls.length;

    const totalsOf = async (): Promise<UsageTotal> => {
      const usage = (await api('GET', '/api/usage?group_by=key&interval=hour')).body as { totals: UsageTotal[] };
      const total = usage.totals.find((row) => row.group === key.id);
      if (!total) throw new Error(`no usage for ${key.id}`);
      return total;
    };
    const deadline = Date.now() + 5_000;
    let totals = await totalsOf();
    while (totals.requests < bills + 1 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      totals = await totalsOf();
    }
    // Every request counts; only the ones a provider answered bring tokens.
    expect(totals.requests).toBe(bills + 1);
    expect(totals.errors).toBe(0);
    expect(totals.input_tokens).toBe(bills * (bought?.prompt_tokens ?? 0));
    expect(totals.output_tokens).toBe(bills * (bought?.completion_tokens ?? 0));

    // The metrics agree: tokens as charged.
    const metrics = await (await fetch(`${tg.url}/metrics`)).text();
    const input = metrics.split('\n').find((line) => line.startsWith('tollgate_tokens_total{') && line.includes('direction="input"') && line.includes('gpt-4o-mini'));
    expect(Number(input?.split(' ').pop())).toBe(totals.input_tokens);
  });
});
