import type { RootDatabase } from 'lmdb';

/**
 * Commits a small write transaction (a request's spend, its log entry, a cache entry) and resolves once it is
 * committed.
 *
 * Without fsync (the default) the commit runs synchronously: it only copies a few pages into the OS page cache,
 * measured at about 8 µs of wall and CPU time, where lmdb-js's asynchronous transaction hands the work to its write
 * thread and back (65-170 µs of wall time and 65-110 µs of CPU on this machine, most of a keyed request's extra
 * latency when the answer waits for its spend). Either way the data is committed when this resolves, so it
 * survives kill -9. With fsync (TOLLGATE_FSYNC=true) each commit waits for the disk, which must never block the
 * event loop: the asynchronous transaction is used.
 */
export function commit<T>(root: RootDatabase, work: () => T): Promise<T> {
  if (!(root as RootDatabase & { noSync?: boolean }).noSync) return root.transaction(work);
  try {
    return Promise.resolve(root.transactionSync(work));
  } catch (err) {
    return Promise.reject(err);
  }
}
