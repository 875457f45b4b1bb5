import { Counter, type Registry } from 'prom-client';

/** One series' increments since the last scrape. */
interface Pending {
  labels: Record<string, string>;
  value: number;
}

type SeriesLevel = Map<string, SeriesLevel | Pending>;

/**
 * A prom-client counter fed per request through a plain map: increments are summed under their label values and
 * handed to prom-client when the registry is read (a scrape). prom-client checks and hashes a labels object on
 * every `inc`; the per-request counters (requests, tokens twice, cost, attempts) did that five times a request.
 * What a scrape shows is the same, counted up to the scrape.
 */
export class BufferedCounter {
  /** Series by their label values, one map level per label; the last level holds the series. */
  private readonly series: SeriesLevel = new Map();
  /** Every series, for the scrape. */
  private readonly all: Pending[] = [];
  private readonly counter: Counter;

  constructor(
    registry: Registry,
    name: string,
    help: string,
    private readonly labelNames: readonly string[],
  ) {
    if (labelNames.length < 1 || labelNames.length > 3) throw new Error(`${name}: a buffered counter takes one to three labels`);
    const flush = (): void => this.flush();
    this.counter = new Counter({
      name,
      help,
      labelNames: [...labelNames],
      registers: [registry],
      collect() {
        flush();
      },
    });
  }

  /** Adds `value` to the series of these label values, given in `labelNames` order (up to three labels). */
  add(value: number, a: string, b?: string, c?: string): void {
    // One map level per label, so no joined key can make two series one (label values include client-sent models).
    const values = b === undefined ? [a] : c === undefined ? [a, b] : [a, b, c];
    let level = this.series;
    for (let i = 0; i < values.length - 1; i++) {
      const part = values[i] as string;
      let next = level.get(part) as SeriesLevel | undefined;
      if (!next) level.set(part, (next = new Map()));
      level = next;
    }
    const last = values[values.length - 1] as string;
    const pending = level.get(last) as Pending | undefined;
    if (pending) {
      pending.value += value;
      return;
    }
    const labels: Record<string, string> = {};
    this.labelNames.forEach((label, i) => (labels[label] = values[i] as string));
    const created: Pending = { labels, value };
    level.set(last, created);
    this.all.push(created);
  }

  private flush(): void {
    // The series are kept (their label values are bounded): the next request of a series updates it in place.
    for (const series of this.all) {
      if (series.value > 0) this.counter.inc(series.labels, series.value);
      series.value = 0;
    }
  }
}
