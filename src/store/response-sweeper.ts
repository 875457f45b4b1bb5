import { startSweeps, type Sweeper } from '../core/background-sweeps.js';
import type { Log } from '../log.js';
import type { ResponseStore } from './response-store.js';

/** How often stored Responses are swept (as the request log). */
export const RESPONSE_SWEEP_INTERVAL_MS = 5 * 60_000;

/** Sweeps the stored Responses on a timer and when a write overruns their byte bound (see startSweeps). */
export type ResponseSweeper = Sweeper;

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
  const overBound = (): boolean => {
    const { maxBytes } = limits();
    return maxBytes !== null && store.bytes() > maxBytes;
  };
  /** A sweep asked for while one ran (a write past the bound): it runs once that one ends, if still needed. */
  let again = false;
  const sweeps = startSweeps(
    {
      async run(stopped) {
        const deleted = await store.sweep({ ...limits(), stopped });
        if (deleted > 0) log.info({ deleted }, 'stored responses swept');
        return deleted;
      },
      failed: (err) => log.error({ err }, 'could not sweep the stored responses'),
      again: () => {
        const asked = again;
        again = false;
        return asked && overBound();
      },
    },
    intervalMs,
  );
  let stopped = false;
  const stopWatching = store.onWritten(() => {
    if (stopped || !overBound()) return;
    if (sweeps.running()) again = true;
    else setImmediate(() => void sweeps.sweep());
  });
  return {
    sweep: sweeps.sweep,
    async stop() {
      stopped = true;
      stopWatching();
      await sweeps.stop();
    },
  };
}
