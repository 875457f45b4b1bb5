import type { Registry } from 'prom-client';

/** One line of the exposition, as prom-client's registry reads a metric's values. */
interface ExpositionValue {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/** One series: its labels and its observations counted per bucket (not yet cumulative), with their sum and count. */
interface Series {
  labels: Record<string, string>;
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * A histogram by provider and model, observed per request through plain maps and arrays and read by prom-client's
 * registry like its own histograms (same series, same lines). prom-client's `observe` validates and hashes a labels
 * object and builds two closures on every call: with two or three histograms fed per request, that was a third to
 * a half of what the metrics subscriber cost a request (bench/RESULTS.md, issue 16).
 */
export class BufferedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** Series by provider, then model (one map level per label: no joined key can make two series one). */
  private readonly series = new Map<string, Map<string, Series>>();
  /** Every series, in the order they first appeared (prom-client's order too). */
  private readonly all: Series[] = [];

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
    /** Upper bounds, ascending (the `+Inf` bucket is implied). */
    private readonly bounds: readonly number[],
  ) {
    // The registry reads any object with a name, help, type and `get()` (its own metrics are read the same way).
    registry.registerMetric(this as never);
  }

  observe(provider: string, model: string, value: number): void {
    if (!Number.isFinite(value)) return;
    let byModel = this.series.get(provider);
    if (!byModel) this.series.set(provider, (byModel = new Map()));
    let series = byModel.get(model);
    if (!series) {
      series = { labels: { provider, model }, buckets: new Float64Array(this.bounds.length), sum: 0, count: 0 };
      byModel.set(model, series);
      this.all.push(series);
    }
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        (series.buckets[i] as number)++;
        break;
      }
    }
    series.sum += value;
    series.count++;
  }

  /** What prom-client's registry renders: cumulative `_bucket` lines per bound and `+Inf`, then `_sum` and `_count`. */
  get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: ExpositionValue[] }> {
    const values: ExpositionValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const { labels, buckets, sum, count } of this.all) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += buckets[i] as number;
        values.push({ metricName: bucketName, labels: { le: this.bounds[i] as number, ...labels }, value: cumulative });
      }
      values.push({ metricName: bucketName, labels: { le: '+Inf', ...labels }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels, value: sum });
      values.push({ metricName: `${this.name}_count`, labels, value: count });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values });
  }

  /** Forgets every series (prom-client's `reset`). */
  reset(): void {
    this.series.clear();
    this.all.length = 0;
  }
}
