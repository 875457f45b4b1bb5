import { mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { open, type Database, type RootDatabase } from 'lmdb';
import { AuditLog } from './audit-log.js';
import { commitWaiting } from './commit.js';
import { ConfigRepo } from './config-repo.js';
import { openRecords } from './records.js';

export interface InstanceMeta {
  firstStartedAt: string;
  lastStartedAt: string;
  version: string;
  starts: number;
}

/**
 * The single LMDB environment under the data directory. Typed stores (config, keys, usage, logs, cache,
 * audit) are named sub-databases of it; lmdb-js batches the writes of one event-loop turn into one
 * transaction. A request's own writes commit through commit.ts: its spend at the end of its event-loop turn,
 * with the other spends of that turn (`commit`); its log entry and cache entry with the other background writes
 * of the next few milliseconds (`commitSoon`). Without fsync both commit synchronously into the page cache,
 * never waiting for the disk on the event loop.
 */
export class Store {
  readonly root: RootDatabase;
  readonly meta: Database<InstanceMeta, string>;
  readonly config: ConfigRepo;
  readonly audit: AuditLog;
  readonly path: string;

  private constructor(path: string, root: RootDatabase) {
    this.path = path;
    this.root = root;
    this.meta = openRecords<InstanceMeta, string>(root, { name: 'meta' });
    this.config = new ConfigRepo(root);
    this.audit = new AuditLog(root);
  }

  /** Bytes the LMDB file takes on disk (its data file: it grows with the data and is reused after deletes). */
  sizeBytes(): number {
    try {
      const file = resolve(this.path, 'tollgate.lmdb');
      const stats = statSync(file);
      return stats.isDirectory() ? statSync(resolve(file, 'data.mdb')).size : stats.size;
    } catch {
      return 0;
    }
  }

  static async open(dataDir: string, version: string, fsync = false): Promise<Store> {
    const path = resolve(dataDir);
    mkdirSync(path, { recursive: true });
    // Without fsync per commit a committed transaction still survives the process being killed (the OS holds
    // it); TOLLGATE_FSYNC=true also makes it survive power loss, at a cost on every write.
    const root = open({ path: resolve(path, 'tollgate.lmdb'), maxDbs: 48, compression: false, noSync: !fsync });
    const store = new Store(path, root);
    const now = new Date().toISOString();
    const previous = store.meta.get('instance');
    await store.meta.put('instance', {
      firstStartedAt: previous?.firstStartedAt ?? now,
      lastStartedAt: now,
      version,
      starts: (previous?.starts ?? 0) + 1,
    });
    return store;
  }

  private closing: Promise<void> | null = null;

  /**
   * Commits the writes waiting for their turn or window, then closes the environment once lmdb-js's write thread has
   * finished the transactions it holds. Called again (a second signal while a shutdown runs), it is the same close.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      commitWaiting(this.root);
      await this.root.close();
    })();
    return this.closing;
  }
}
