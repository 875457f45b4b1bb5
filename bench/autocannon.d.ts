// autocannon ships no type declarations and @types/autocannon is not installed; this declares only the
// part of its programmatic API the overhead bench uses.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Options {
    url: string;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    connections?: number;
    duration?: number;
    overallRate?: number;
    pipelining?: number;
    timeout?: number;
    /** Per-request hooks; `setupRequest` may return a changed request (e.g. a new body). */
    requests?: Array<{ setupRequest?: (request: { body?: string }) => { body?: string } }>;
  }

  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    total?: number;
  }

  interface Result {
    requests: Histogram;
    latency: Histogram;
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
  }

  interface Instance extends EventEmitter {
    stop(): void;
  }

  function autocannon(options: Options, callback: (err: Error | null, result: Result) => void): Instance;

  export type { Options, Result, Instance };
  export default autocannon;
}
