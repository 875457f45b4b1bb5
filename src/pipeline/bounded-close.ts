import type { Log } from '../log.js';

/** How long a stage's or a plugin's close() is waited for. */
export const CLOSE_TIMEOUT_MS = 5_000;

/**
 * Calls `close` and waits for it at most CLOSE_TIMEOUT_MS. A plugin's close() that never settles (an exporter
 * flushing to a host that does not answer) held the gateway's shutdown before the request log was flushed and the
 * store closed, so `tollgate serve` never exited on SIGTERM and a supervisor's SIGKILL then lost the last requests'
 * log entries. One that fails or takes longer is logged and left behind; nothing else waits for it.
 */
export async function closeWithin(close: () => unknown, log: Log, fields: Record<string, unknown>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closing = Promise.resolve().then(close);
  try {
    const late = await Promise.race([closing.then(() => false), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), CLOSE_TIMEOUT_MS)))]);
    if (late) {
      log.warn(fields, `${what} did not finish closing within ${CLOSE_TIMEOUT_MS} ms; not waiting for it`);
      closing.catch((err: unknown) => log.error({ ...fields, err }, `${what} failed to close`));
    }
  } catch (err) {
    log.error({ ...fields, err }, `${what} failed to close`);
  } finally {
    clearTimeout(timer);
  }
}
