import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayApi } from '../helpers/gateway-api.js';
import { startGateway, type RunningGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream, type ScriptedUpstream } from '../upstream/openai-upstream.js';

/**
 * /api/usage adds up the cost of requests in binary floating point: its spend must read as the sum of the costs in
 * the log and on the key ($0.30 for three $0.10 requests), not with the rounding noise of the additions, whether the
 * rollups of the last second are written yet or not.
 */

let upstream: ScriptedUpstream;
let tg: RunningGateway;
const { api, createKey, clientFor } = gatewayApi(() => tg.url);

beforeAll(async () => {
  upstream = await startOpenAIUpstream({ apiKey: 'sk-upstream', chunkDelayMs: 0 });
  // The scripted upstream counts 4 prompt tokens for the message below: $0.10 a request.
  tg = await startGateway({ providers: { openai: { base_url: `${upstream.url}/v1`, api_key: 'sk-upstream', prices: { dime: { input_per_mtok: 25_000, output_per_mtok: 0 } } } } });
});
afterAll(async () => {
  await tg.stop();
  await upstream.close();
});

describe('GET /api/usage spend', () => {
  it('is the sum of the costs the log and the key show, without floating-point noise, before and after the rollups are written', async () => {
    const key = await createKey({ name: 'dimes', budget: 100 });
    for (let i = 0; i < 3; i++) await clientFor(key.key).chat.completions.create({ model: 'openai/dime', messages: [{ role: 'user', content: 'hi' }] });
    const deadline = Date.now() + 5_000;
    let logged: Array<{ cost_usd: number }> = [];
    while (logged.length < 3 && Date.now() < deadline) {
      logged = (await api('GET', `/api/logs?key_id=${key.id}`)).body.data;
      if (logged.length < 3) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(logged.map((entry) => entry.cost_usd)).toEqual([0.1, 0.1, 0.1]);
    expect((await api('GET', `/api/keys/${key.id}`)).body.spend).toBe(0.3);

    const spendOf = async (): Promise<{ rows: number[]; total: number }> => {
      const usage = (await api('GET', '/api/usage?group_by=key&interval=hour')).body;
      const rows = usage.data.filter((row: { group: string }) => row.group === key.id).map((row: { spend_usd: number }) => row.spend_usd);
      return { rows, total: usage.totals.find((total: { group: string }) => total.group === key.id).spend_usd };
    };
    // Read while the deltas of the last second are pending, then once they are written.
    const pending = await spendOf();
    expect(pending.total).toBe(0.3);
    // The rollups are written once a second.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const written = await spendOf();
    expect(written.total).toBe(0.3);
    expect(written).toEqual(pending);
  });
});
