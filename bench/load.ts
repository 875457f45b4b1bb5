import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  body: string;
  connections: number;
  durationSec: number;
}

export interface LoadResult {
  rps: number;
  /** Latency percentiles in ms, from autocannon's per-response times (fractional, see below). */
  p50: number;
  p99: number;
  completed: number;
  non2xx: number;
  errors: number;
}

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/**
 * One autocannon run (POST with a JSON body, no pipelining). autocannon's own `latency.p50/p99` come from
 * an HDR histogram with a 1 ms resolution, which rounds every sub-millisecond latency to 0 or 1 and would
 * hide exactly the overhead this bench is about; the `response` event carries the fractional time (ms,
 * from hrtime), so percentiles are computed from those instead.
 */
export function runLoad(options: LoadOptions): Promise<LoadResult> {
  let latencies = new Float64Array(1 << 16);
  let count = 0;
  return new Promise<LoadResult>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body: options.body,
        connections: options.connections,
        duration: options.durationSec,
        pipelining: 1,
        timeout: 10,
      },
      (err, result) => {
        if (err) return reject(err);
        const sorted = latencies.subarray(0, count).sort();
        resolve({
          rps: result.requests.average,
          p50: percentile(sorted, 50),
          p99: percentile(sorted, 99),
          completed: count,
          non2xx: result.non2xx,
          errors: result.errors,
        });
      },
    );
    instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
      // Same rule as autocannon: only 2xx answers go into the latency figures.
      if (statusCode < 200 || statusCode >= 300) return;
      if (count === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[count++] = responseTime;
    });
  });
}
