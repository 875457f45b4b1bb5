import { startSweeps, type Sweeper } from '../core/background-sweeps.js';
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
  /** Most bytes the log's pages take (entries and their indexes); null for no limit. */
  maxBytes: number | null;
}

/** Trims the request log on a timer (see startSweeps). */
export type LogSweeper = Sweeper;

/**
 * Keeps the request log within `settings.log_retention_days`, `log_max_entries` and `log_max_bytes`: one sweep shortly
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
  return startSweeps(
    {
      async run(stopped) {
        const { days, maxEntries, maxBytes } = retention();
        const deleted = await governance.trimRequestLog({ olderThan: new Date(now() - days * DAY_MS), maxEntries, maxBytes, stopped });
        if (deleted > 0) log.info({ deleted, retentionDays: days, maxEntries, maxBytes }, 'request log trimmed');
        return deleted;
      },
      failed: (err) => log.error({ err }, 'could not trim the request log'),
    },
    intervalMs,
  );
}
