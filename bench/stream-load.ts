import { Pool } from 'undici';

export interface StreamLoadOptions {
  /** Origin of the server (no path). */
  origin: string;
  path: string;
  headers: Record<string, string>;
  /** A body per request. */
  nextBody: () => string;
  connections: number;
  durationSec: number;
}

/** Per-request times in ms (fractional): to the first body byte and to the last. */
export interface StreamSlice {
  firstByte: Float64Array;
  lastByte: Float64Array;
  durationSec: number;
  non2xx: number;
  errors: number;
}

/**
 * A closed-loop streaming client: `connections` loops, each sending one request after another on its own
 * keep-alive connection and timing, from the request's start, the first byte of the body (the first SSE frame)
 * and the last. autocannon only sees whole responses, so time to first byte needs this.
 */
export async function runStreamLoad(options: StreamLoadOptions): Promise<StreamSlice> {
  const pool = new Pool(options.origin, { connections: options.connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const first: number[] = [];
  const last: number[] = [];
  let non2xx = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.durationSec * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        const response = await pool.request({ method: 'POST', path: options.path, headers: options.headers, body: options.nextBody() });
        let firstAt = 0;
        for await (const chunk of response.body) if (firstAt === 0 && (chunk as Buffer).length > 0) firstAt = performance.now();
        const end = performance.now();
        if (response.statusCode < 200 || response.statusCode >= 300) {
          non2xx++;
          continue;
        }
        first.push((firstAt || end) - t0);
        last.push(end - t0);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, loop));
  const durationSec = (performance.now() - started) / 1000;
  await pool.close();
  return { firstByte: Float64Array.from(first), lastByte: Float64Array.from(last), durationSec, non2xx, errors };
}
