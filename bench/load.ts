import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  body: string;
  /** A fresh body per request (e.g. a different prompt each time, so a response cache misses); overrides `body`. */
  nextBody?: () => string;
  /** Sent with every request; `authorization` defaults to a provider-style key the gateway ignores. */
  headers?: Record<string, string>;
  connections: number;
  durationSec: number;
  /** Requests per second across all connections (open-loop pacing); unset: as fast as answers come. */
  rate?: number;
}

/** One autocannon run: the raw per-response latencies, so several runs can be merged before percentiles. */
export interface LoadSlice {
  /** Latency of each 2xx response, in ms (fractional). */
  latencies: Float64Array;
  /** Wall time of the run as autocannon measured it, in seconds. */
  durationSec: number;
  non2xx: number;
  errors: number;
}

/**
 * One autocannon run (POST with a JSON body, no pipelining). autocannon's own `latency.p50/p99` come from
 * an HDR histogram with a 1 ms resolution, which rounds every sub-millisecond latency to 0 or 1 and would
 * hide exactly the overhead this bench is about; its `response` event carries the fractional time (ms,
 * from hrtime, until the whole response was read), so the latencies are collected from that instead.
 */
export function runLoad(options: LoadOptions): Promise<LoadSlice> {
  let latencies = new Float64Array(1 << 15);
  let count = 0;
  return new Promise<LoadSlice>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench', ...options.headers },
        body: options.body,
        ...(options.nextBody ? { requests: [{ setupRequest: withBody(options.nextBody) }] } : {}),
        connections: options.connections,
        duration: options.durationSec,
        ...(options.rate ? { overallRate: options.rate } : {}),
        pipelining: 1,
        timeout: 10,
      },
      (err, result) => {
        if (err) return reject(err);
        resolve({ latencies: latencies.slice(0, count), durationSec: result.duration, non2xx: result.non2xx, errors: result.errors });
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

/** autocannon's per-request hook, giving each request its own body. */
function withBody(nextBody: () => string) {
  return (request: { body?: string }) => ({ ...request, body: nextBody() });
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/** Concatenates slices' latencies and sorts them, ready for `percentile`. */
export function mergeSorted(parts: Float64Array[]): Float64Array {
  const merged = new Float64Array(parts.reduce((n, part) => n + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    merged.set(part, offset);
    offset += part.length;
  }
  return merged.sort();
}
