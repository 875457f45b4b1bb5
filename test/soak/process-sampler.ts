// Samples a running gateway process from outside: resident memory and open file descriptors from /proc, event-loop
// lag, handles and heap from its own Prometheus metrics (prom-client's process series).
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessSample {
  /** Seconds since the sampler started. */
  atSec: number;
  /** Resident set size, from /proc/<pid>/status VmRSS. */
  rssBytes: number;
  /**
   * Its anonymous part (RssAnon): the heap, native allocations, the vector index. The rest is mostly LMDB's
   * memory map, whose resident pages grow with the store by design (the request log is written all the time), so
   * a leak is read from this part.
   */
  rssAnonBytes: number;
  /** Entries in /proc/<pid>/fd: sockets, files, pipes, epoll and eventfds (worker threads share the table). */
  fds: number;
  /**
   * Event-loop lag p99 since the previous scrape (the gateway's series read the delay beyond their sampling
   * interval, src/telemetry/metrics/event-loop-delay.ts, and start a new window at each scrape).
   */
  lagP99Ms: number;
  /** nodejs_active_handles_total: libuv handles JavaScript holds (sockets, timers with refs, servers). */
  handles: number;
  /** nodejs_active_resources_total: everything keeping the loop alive, including requests in progress. */
  resources: number;
  heapUsedBytes: number;
}

/** The value of an unlabelled series in Prometheus text, NaN when absent. */
export function metricValue(text: string, name: string): number {
  const match = new RegExp(`^${name} ([^\\s]+)`, 'm').exec(text);
  return match ? Number(match[1]) : Number.NaN;
}

/** A `<field>: <n> kB` line of /proc/<pid>/status, in bytes. */
export function statusBytes(pid: number, field: 'VmRSS' | 'RssAnon' | 'RssFile'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1];
  return kb === undefined ? Number.NaN : Number(kb) * 1024;
}

export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export async function sampleProcess(pid: number, metricsUrl: string, startedAt: number): Promise<ProcessSample> {
  const res = await fetch(metricsUrl);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  const text = await res.text();
  return {
    atSec: (performance.now() - startedAt) / 1000,
    rssBytes: statusBytes(pid, 'VmRSS'),
    rssAnonBytes: statusBytes(pid, 'RssAnon'),
    fds: openFds(pid),
    lagP99Ms: metricValue(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
    handles: metricValue(text, 'nodejs_active_handles_total'),
    resources: metricValue(text, 'nodejs_active_resources_total'),
    heapUsedBytes: metricValue(text, 'nodejs_heap_size_used_bytes'),
  };
}
