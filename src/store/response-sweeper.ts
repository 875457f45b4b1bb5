import type { Log } from '../log.js';
import type { ResponseStore } from './response-store.js';

/** How often stored Responses are swept (as the request log). */
export const RESPONSE_SWEEP_INTERVAL_MS = 5 * 60_000;

export interface ResponseSweeper {
  /** Sweeps now (also what the timer runs); resolves with the number of Responses deleted. */
  sweep(): Promise<number>;
  /** Stops the timer and any sweep in progress (between batches); resolves once nothing runs any more. */
  stop(): Promise<void>;
}

/** The limits a sweep keeps the stored Responses within (read at each sweep: they follow the live config). */
export interface ResponseLimits {
  maxEntries: number | null;
  maxBytes: number | null;
}

/**
 * Keeps the stored Responses within their expiry, `settings.response_max_entries` and `settings.response_max_bytes`:
 * one sweep shortly after start, then one every `intervalMs`, in batches that leave the event loop free, and one as
 * soon as a write takes the store past its byte bound (a burst of big turns would otherwise overrun it until the
 * next tick). The timer never keeps the process alive, and sweeps never overlap.
 */
export function startResponseSweeper(store: ResponseStore, limits: () => ResponseLimits, log: Log, intervalMs = RESPONSE_SWEEP_INTERVAL_MS): ResponseSweeper {
  let stopped = false;
  let running: Promise<number> | null = null;
  /** A sweep asked for while one ran (a write past the bound): it runs once that one ends. */
  let again = false;
  const overBound = (): boolean => {
    const { maxBytes } = limits();
    return maxBytes !== null && store.bytes() > maxBytes;
  };
  const sweep = (): Promise<number> => {
    if (stopped) return Promise.resolve(0);
    running ??= (async () => {
      try {
        const deleted = await store.sweep({ ...limits(), stopped: () => stopped });
        if (deleted > 0) log.info({ deleted }, 'stored responses swept');
        return deleted;
      } catch (err) {
        if (!stopped) log.error({ err }, 'could not sweep the stored responses');
        return 0;
      } finally {
        running = null;
        if (again && !stopped) {
          again = false;
          if (overBound()) setImmediate(() => void sweep());
        }
      }
    })();
    return running;
  };
  const stopWatching = store.onWritten(() => {
    if (stopped || !overBound()) return;
    if (running) again = true;
    else setImmediate(() => void sweep());
  });
  const first = setTimeout(() => void sweep(), 1_000);
  const timer = setInterval(() => void sweep(), intervalMs);
  first.unref();
  timer.unref();
  return {
    sweep,
    async stop() {
      stopped = true;
      stopWatching();
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
