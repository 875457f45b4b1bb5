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

/**
 * Keeps the stored Responses within their expiry and `settings.response_max_entries`: one sweep shortly after start,
 * then one every `intervalMs`, in batches that leave the event loop free. The limit is read at each sweep; the
 * timer never keeps the process alive, and sweeps never overlap.
 */
export function startResponseSweeper(store: ResponseStore, maxEntries: () => number | null, log: Log, intervalMs = RESPONSE_SWEEP_INTERVAL_MS): ResponseSweeper {
  let stopped = false;
  let running: Promise<number> | null = null;
  const sweep = (): Promise<number> => {
    if (stopped) return Promise.resolve(0);
    running ??= (async () => {
      try {
        const deleted = await store.sweep({ maxEntries: maxEntries(), stopped: () => stopped });
        if (deleted > 0) log.info({ deleted }, 'stored responses swept');
        return deleted;
      } catch (err) {
        if (!stopped) log.error({ err }, 'could not sweep the stored responses');
        return 0;
      } finally {
        running = null;
      }
    })();
    return running;
  };
  const first = setTimeout(() => void sweep(), 1_000);
  const timer = setInterval(() => void sweep(), intervalMs);
  first.unref();
  timer.unref();
  return {
    sweep,
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
