import { describe, expect, it } from 'vitest';
import { processMetrics } from '../../src/telemetry/metrics/process-metrics.js';
import { EVENT_LOOP_SAMPLE_INTERVAL_MS } from '../../src/telemetry/metrics/event-loop-delay.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function seriesValue(text: string, name: string): number {
  const lines = text.split('\n').filter((line) => line.startsWith(`${name} `));
  expect(lines, `${name} appears once`).toHaveLength(1);
  return Number(lines[0]!.slice(name.length + 1));
}

describe('event-loop delay series', () => {
  it('read the delay itself (not the sampling interval plus the delay), and a stall longer than the interval', async () => {
    const registry = processMetrics();
    await registry.metrics(); // starts a new window
    await sleep(EVENT_LOOP_SAMPLE_INTERVAL_MS * 4);
    const idle = await registry.metrics();
    // Node's histogram records whole intervals between samples: without the subtraction these read >= 0.1 s.
    expect(seriesValue(idle, 'nodejs_eventloop_lag_min_seconds')).toBeLessThan(0.05);
    expect(seriesValue(idle, 'nodejs_eventloop_lag_p50_seconds')).toBeLessThan(0.05);

    await sleep(EVENT_LOOP_SAMPLE_INTERVAL_MS);
    const stallStart = performance.now();
    while (performance.now() - stallStart < EVENT_LOOP_SAMPLE_INTERVAL_MS * 2.5) {
      // a synchronous stall of 250 ms: the sample due inside it runs at least 150 ms late
    }
    await sleep(EVENT_LOOP_SAMPLE_INTERVAL_MS * 2);
    const stalled = await registry.metrics();
    expect(seriesValue(stalled, 'nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.14);
    expect(seriesValue(stalled, 'nodejs_eventloop_lag_max_seconds')).toBeLessThan(0.3);
    // prom-client's own series stay, under their names
    expect(stalled).toContain('nodejs_eventloop_lag_seconds ');
    expect(stalled).toContain('nodejs_gc_duration_seconds');
  });
});
