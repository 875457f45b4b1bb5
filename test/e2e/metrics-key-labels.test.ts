import { describe, expect, it } from 'vitest';
import { LabelValues } from '../../src/telemetry/metrics/label-values.js';
import { openAIConfig, startGateway } from '../helpers/gateway.js';
import { startOpenAIUpstream } from '../upstream/openai-upstream.js';

describe('label values', () => {
  it('give a forgotten value\'s slot to a new one', () => {
    const labels = new LabelValues(2);
    expect([labels.of('a'), labels.of('b'), labels.of('c')]).toEqual(['a', 'b', 'other']);
    labels.retain(new Set(['b', 'c']));
    expect([labels.of('c'), labels.of('b'), labels.of('d')]).toEqual(['c', 'b', 'other']);
  });

  it('keep the values of no pool past the cap, and cap each pool on its own', () => {
    const labels = new LabelValues(2, (value, context) => (value.startsWith('known-') ? null : context));
    expect([labels.of('known-1', 'p'), labels.of('a', 'p'), labels.of('b', 'p'), labels.of('c', 'p'), labels.of('known-2', 'p'), labels.of('x', 'q')]).toEqual(['known-1', 'a', 'b', 'other', 'known-2', 'x']);
    // Forgetting a value of no pool frees no slot; forgetting a pool's value frees one of that pool.
    labels.retain(new Set(['a', 'b', 'x']));
    expect(labels.of('c', 'p')).toBe('other');
    labels.retain(new Set(['a', 'x']));
    expect([labels.of('c', 'p'), labels.of('d', 'p'), labels.of('known-1', 'p')]).toEqual(['c', 'other', 'known-1']);
  });
});

describe('tollgate_key_spend_usd', () => {
  it('names each live key after many more keys came and went than the label cap holds', async () => {
    const upstream = await startOpenAIUpstream({ chunkDelayMs: 0 });
    const tg = await startGateway(openAIConfig(upstream.url));
    try {
      const store = tg.gateway.governance;
      // 2,100 keys made and deleted, 300 at a time, each round scraped while they lived (the cap is 2,000).
      for (let round = 0; round < 7; round++) {
        const made = await Promise.all(Array.from({ length: 300 }, (_, i) => store.createKey({ name: `churn-${round}-${i}` })));
        expect((await fetch(`${tg.url}/metrics`)).status).toBe(200);
        for (const { record } of made) await store.deleteKey(record.id);
      }
      const { record, key } = await store.createKey({ name: 'survivor' });
      const answer = await fetch(`${tg.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }),
      });
      expect(answer.status).toBe(200);
      const scrape = await (await fetch(`${tg.url}/metrics`)).text();
      const lines = scrape.split('\n').filter((line) => line.startsWith('tollgate_key_spend_usd{'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`key="${record.id}"`);
    } finally {
      await tg.stop();
      await upstream.close();
    }
  }, 60_000);
});
