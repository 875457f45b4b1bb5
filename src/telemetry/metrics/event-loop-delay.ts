import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Gauge, type Registry } from 'prom-client';

/**
 * How often the event loop is sampled. prom-client samples every 10 ms, a timer that wakes an otherwise idle
 * process 100 times a second; on a small VM each wake-up costs 25-50 µs of CPU, several µs per request at a few
 * hundred requests a second (bench/RESULTS.md, "What the scrape costs"). At 100 ms the cost is a tenth, and a
 * 15 s scrape interval still holds 150 samples. A block shorter than the interval can fall between two samples;
 * a longer one cannot.
 */
export const EVENT_LOOP_SAMPLE_INTERVAL_MS = 100;

/** prom-client's histogram series of event-loop delay; these replace them, under the same names. */
export const EVENT_LOOP_DELAY_SERIES = {
  nodejs_eventloop_lag_min_seconds: 'The minimum recorded event loop delay.',
  nodejs_eventloop_lag_max_seconds: 'The maximum recorded event loop delay.',
  nodejs_eventloop_lag_mean_seconds: 'The mean of the recorded event loop delays.',
  nodejs_eventloop_lag_stddev_seconds: 'The standard deviation of the recorded event loop delays.',
  nodejs_eventloop_lag_p50_seconds: 'The 50th percentile of the recorded event loop delays.',
  nodejs_eventloop_lag_p90_seconds: 'The 90th percentile of the recorded event loop delays.',
  nodejs_eventloop_lag_p99_seconds: 'The 99th percentile of the recorded event loop delays.',
} as const;

type SeriesName = keyof typeof EVENT_LOOP_DELAY_SERIES;

/**
 * Registers the event-loop delay series, sampled every EVENT_LOOP_SAMPLE_INTERVAL_MS. Node's histogram records
 * the whole time between two samples (the interval plus the delay), which is why prom-client's series read 10 ms
 * on an idle process; these subtract the interval, so they read the delay itself (0 when idle). Each scrape
 * reads the samples taken since the previous one, as prom-client's do.
 */
export function registerEventLoopDelay(registry: Registry): void {
  const histogram = monitorEventLoopDelay({ resolution: EVENT_LOOP_SAMPLE_INTERVAL_MS });
  histogram.enable();
  const intervalNanos = EVENT_LOOP_SAMPLE_INTERVAL_MS * 1e6;
  const delaySeconds = (nanos: number): number => Math.max(0, nanos - intervalNanos) / 1e9;
  const gauges = {} as Record<SeriesName, Gauge>;
  // The first series' collect sets all seven, then starts a new window: the registry collects its series in the
  // order they were registered.
  const collect = (): void => {
    // No sample since the last scrape (scrapes closer together than the interval): keep the last values.
    if (histogram.count === 0) return;
    gauges.nodejs_eventloop_lag_min_seconds.set(delaySeconds(histogram.min));
    gauges.nodejs_eventloop_lag_max_seconds.set(delaySeconds(histogram.max));
    gauges.nodejs_eventloop_lag_mean_seconds.set(delaySeconds(histogram.mean));
    gauges.nodejs_eventloop_lag_stddev_seconds.set(histogram.stddev / 1e9);
    gauges.nodejs_eventloop_lag_p50_seconds.set(delaySeconds(histogram.percentile(50)));
    gauges.nodejs_eventloop_lag_p90_seconds.set(delaySeconds(histogram.percentile(90)));
    gauges.nodejs_eventloop_lag_p99_seconds.set(delaySeconds(histogram.percentile(99)));
    histogram.reset();
  };
  for (const [name, help] of Object.entries(EVENT_LOOP_DELAY_SERIES) as Array<[SeriesName, string]>) {
    const first = name === 'nodejs_eventloop_lag_min_seconds';
    gauges[name] = new Gauge({ name, help, registers: [registry], ...(first ? { collect } : {}) });
  }
}
