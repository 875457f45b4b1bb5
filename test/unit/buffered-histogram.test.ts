import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BufferedHistogram } from '../../src/telemetry/metrics/buffered-histogram.js';

const BOUNDS = [0.001, 0.01, 0.1, 1, 10];

/** The same observations through prom-client's own histogram and through ours: the scrapes must read the same. */
async function bothScrapes(observations: Array<[string, string, number]>): Promise<[string, string]> {
  const theirs = new Registry();
  const reference = new Histogram({ name: 'h_seconds', help: 'A histogram.', labelNames: ['provider', 'model'], buckets: BOUNDS, registers: [theirs] });
  const ours = new Registry();
  const buffered = new BufferedHistogram(ours, 'h_seconds', 'A histogram.', BOUNDS);
  for (const [provider, model, value] of observations) {
    reference.observe({ provider, model }, value);
    buffered.observe(provider, model, value);
  }
  return [await theirs.metrics(), await ours.metrics()];
}

describe('BufferedHistogram', () => {
  it("renders exactly what prom-client's histogram renders for the same observations", async () => {
    const [theirs, ours] = await bothScrapes([
      ['openai', 'gpt-4o', 0.0004],
      ['openai', 'gpt-4o', 0.001],
      ['openai', 'gpt-4o', 0.05],
      ['anthropic', 'claude "quoted"\nmodel', 3],
      ['openai', 'gpt-4o-mini', 42],
      ['openai', 'gpt-4o', 0.5],
    ]);
    expect(ours).toBe(theirs);
    expect(ours).toContain('h_seconds_bucket{le="0.01",provider="openai",model="gpt-4o"} 2');
    expect(ours).toContain('h_seconds_bucket{le="+Inf",provider="openai",model="gpt-4o-mini"} 1');
    expect(ours).toContain('h_seconds_count{provider="openai",model="gpt-4o"} 4');
  });

  it('renders the header only before anything was observed, and keeps series apart whatever their values hold', async () => {
    const [theirs, ours] = await bothScrapes([]);
    expect(ours).toBe(theirs);
    const registry = new Registry();
    const histogram = new BufferedHistogram(registry, 'h_seconds', 'A histogram.', BOUNDS);
    histogram.observe('a\u0000b', 'c', 1);
    histogram.observe('a', 'b\u0000c', 1);
    expect((await registry.metrics()).match(/h_seconds_count/g)).toHaveLength(2);
  });

  it('ignores a value that is not a finite number instead of corrupting the sum', async () => {
    const registry = new Registry();
    const histogram = new BufferedHistogram(registry, 'h_seconds', 'A histogram.', BOUNDS);
    histogram.observe('p', 'm', Number.NaN);
    histogram.observe('p', 'm', 2);
    const text = await registry.metrics();
    expect(text).toContain('h_seconds_sum{provider="p",model="m"} 2');
    expect(text).toContain('h_seconds_count{provider="p",model="m"} 1');
  });
});
