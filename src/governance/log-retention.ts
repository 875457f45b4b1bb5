import type { Log } from '../log.js';
import type { GovernanceStore } from './governance-store.js';

/** How often the request log is trimmed. */
export const LOG_SWEEP_INTERVAL_MS = 5 * 60_000;
const DAY_MS = 24 * 60 * 60_000;

export interface LogRetention {
  /** Days an entry is kept. */
  days: number;
  /** Most entries kept; null for no limit. */
  maxEntries: number | null;
}

export interface LogSweeper {
  /** Trims now (also what the timer runs); resolves with the number of entries deleted. */
  sweep(): Promise<number>;
  /** Stops the timer and any sweep in progress (between batches); resolves once nothing runs any more. */
  stop(): Promise<void>;
}

/**
 * Keeps the request log within `settings.log_retention_days` and `settings.log_max_entries`: one sweep shortly
 * after start, then one every `intervalMs`. The settings are read at each sweep, so a config change applies at
 * the next one. The timer never keeps the process alive, and sweeps never overlap.
 */
export function startLogSweeper(
  governance: GovernanceStore,
  retention: () => LogRetention,
  log: Log,
  intervalMs = LOG_SWEEP_INTERVAL_MS,
  now: () => number = Date.now,
): LogSweeper {
  let stopped = false;
  let running: Promise<number> | null = null;
  const sweep = (): Promise<number> => {
    if (stopped) return Promise.resolve(0);
    running ??= (async () => {
      try {
        const { days, maxEntries } = retention();
        const deleted = await governance.trimRequestLog({ olderThan: new Date(now() - days * DAY_MS), maxEntries, stopped: () => stopped });
        if (deleted > 0) log.info({ deleted, retentionDays: days, maxEntries }, 'request log trimmed');
        return deleted;
      } catch (err) {
        if (!stopped) log.error({ err }, 'could not trim the request log');
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
