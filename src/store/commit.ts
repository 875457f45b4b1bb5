import type { RootDatabase } from 'lmdb';

/**
 * How long a background write (a request-log entry, a cache entry, a cache hit) may wait for others to share its
 * commit. A commit's cost is mostly the pages it dirties, and consecutive log and cache entries land on the same
 * pages: measured with lmdb-js here, a log entry and a cache entry cost 56 µs of CPU committed alone, 25 µs each
 * when five requests share a commit and 22 µs when ten do. At a thousand requests a second a 5 ms window makes
 * about five share one; a process killed with -9 loses at most this window of background writes (the usage
 * rollups already wait up to a second), never a spend, which commits before the answer ends.
 */
export const BATCH_WINDOW_MS = 5;
/** A batch this large commits at once instead of waiting out the window (bounds a commit under a burst). */
const BATCH_MAX = 256;

interface Waiting {
  work: () => unknown;
  settle: (error: unknown, failed: boolean, result: unknown) => void;
}

/** The background writes waiting for one environment's next commit. */
interface Batch {
  waiting: Waiting[];
  timer: NodeJS.Timeout | null;
}

const batches = new WeakMap<RootDatabase, Batch>();

function noSync(root: RootDatabase): boolean {
  return (root as RootDatabase & { noSync?: boolean }).noSync === true;
}

function batchOf(root: RootDatabase): Batch {
  let batch = batches.get(root);
  if (!batch) batches.set(root, (batch = { waiting: [], timer: null }));
  return batch;
}

function waiting<T>(work: () => T): { entry: Waiting; done: Promise<T> } {
  let entry!: Waiting;
  const done = new Promise<T>((resolve, reject) => {
    entry = { work, settle: (error, failed, result) => (failed ? reject(error) : resolve(result as T)) };
  });
  return { entry, done };
}

/**
 * Runs the works in order in one synchronous transaction. A work that throws fails only its own caller: the others'
 * writes still commit, as with lmdb-js's asynchronous transactions, which batch callbacks the same way.
 */
function commitTogether(root: RootDatabase, works: Waiting[]): void {
  const results: unknown[] = new Array(works.length);
  const errors: unknown[] = new Array(works.length);
  const failed: boolean[] = new Array(works.length).fill(false);
  try {
    root.transactionSync(() => {
      for (let i = 0; i < works.length; i++) {
        try {
          results[i] = (works[i] as Waiting).work();
        } catch (err) {
          failed[i] = true;
          errors[i] = err;
        }
      }
    });
  } catch (err) {
    for (const work of works) work.settle(err, true, undefined);
    return;
  }
  for (let i = 0; i < works.length; i++) (works[i] as Waiting).settle(errors[i], failed[i] as boolean, results[i]);
}

function takeWaiting(batch: Batch): Waiting[] {
  if (batch.timer) clearTimeout(batch.timer);
  batch.timer = null;
  const works = batch.waiting;
  batch.waiting = [];
  return works;
}

/**
 * Commits a request's write that something waits for (its spend, which the answer waits for so the next request
 * sees it) and resolves once it is committed. It does not take the waiting background writes along: they would
 * then commit one request's worth at a time, where waiting out their window lets several requests share pages.
 *
 * Without fsync (the default) the commit runs synchronously: it only copies a few pages into the OS page cache,
 * where lmdb-js's asynchronous transaction hands the work to its write thread and back (65-170 µs of wall time and
 * 65-110 µs of CPU on this machine, most of a keyed request's extra latency when the answer waits for its spend).
 * Either way the data is committed when this resolves, so it survives kill -9. With fsync (TOLLGATE_FSYNC=true) each
 * commit waits for the disk, which must never block the event loop: the asynchronous transaction is used.
 */
export function commit<T>(root: RootDatabase, work: () => T): Promise<T> {
  if (!noSync(root)) return root.transaction(work);
  try {
    return Promise.resolve(root.transactionSync(work));
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Commits a background write (nothing waits for it before answering: a request-log entry, a cache entry or hit)
 * with the others of the next `BATCH_WINDOW_MS`, in one transaction; resolves once it is committed. With fsync,
 * lmdb-js's asynchronous transaction (which batches the callbacks of one event-loop turn) is used as for `commit`.
 */
export function commitSoon<T>(root: RootDatabase, work: () => T): Promise<T> {
  if (!noSync(root)) return root.transaction(work);
  const batch = batchOf(root);
  const own = waiting(work);
  batch.waiting.push(own.entry);
  if (batch.waiting.length >= BATCH_MAX) commitTogether(root, takeWaiting(batch));
  else if (!batch.timer) batch.timer = setTimeout(() => commitTogether(root, takeWaiting(batch)), BATCH_WINDOW_MS);
  return own.done;
}

/** Commits the background writes still waiting for their batch now (before the environment closes). */
export function commitWaiting(root: RootDatabase): void {
  const batch = batches.get(root);
  if (batch && batch.waiting.length > 0) commitTogether(root, takeWaiting(batch));
}
