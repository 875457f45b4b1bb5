import type { Database, RootDatabase } from 'lmdb';
import type { Log } from '../../log.js';
import type { AlertStateStore, StoredOpenAlert } from './rules.js';
import { openRecords } from '../../store/records.js';

type StateValue = { open: StoredOpenAlert } | { notifiedAt: number };

/**
 * The rule engine's state in LMDB: open alerts (so one that fired before a restart is still resolved, with its
 * id, after it) and when each rule and subject last notified (so a restart does not reset cooldowns). Writes are
 * rare (an alert changing state) and not awaited; `flush()` waits for them on shutdown.
 */
export class LmdbAlertState implements AlertStateStore {
  private readonly db: Database<StateValue, string>;
  private readonly writes = new Set<Promise<unknown>>();

  constructor(
    root: RootDatabase,
    private readonly log: Log,
  ) {
    this.db = openRecords<StateValue, string>(root, { name: 'alert-state' });
  }

  load(): { open: StoredOpenAlert[]; notified: Array<[string, number]> } {
    const open: StoredOpenAlert[] = [];
    const notified: Array<[string, number]> = [];
    for (const { key, value } of this.db.getRange()) {
      if (key.startsWith('open:') && 'open' in value) open.push(value.open);
      else if (key.startsWith('notified:') && 'notifiedAt' in value) notified.push([key.slice('notified:'.length), value.notifiedAt]);
    }
    return { open, notified };
  }

  saveOpen(key: string, alert: StoredOpenAlert | null): void {
    this.track(alert ? this.db.put(`open:${key}`, { open: alert }) : this.db.remove(`open:${key}`));
  }

  saveNotified(key: string, at: number | null): void {
    this.track(at === null ? this.db.remove(`notified:${key}`) : this.db.put(`notified:${key}`, { notifiedAt: at }));
  }

  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes]);
  }

  private track(write: Promise<unknown>): void {
    const tracked = write.catch((err: unknown) => this.log.error({ err }, 'alerts: could not write the alert state to the store'));
    this.writes.add(tracked);
    void tracked.finally(() => this.writes.delete(tracked));
  }
}
