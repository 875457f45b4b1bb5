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
/** A batch this large commits at once instead of waiting out its window (bounds a commit under a burst). */
const BATCH_MAX = 256;

interface Waiting {
  work: () => unknown;
  settle: (error: unknown, failed: boolean, result: unknown) => void;
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

/** Writes waiting to commit together: at the end of this event-loop turn (`'turn'`) or within a window of ms. */
class CommitQueue {
  private waiting: Waiting[] = [];
  private timer: NodeJS.Timeout | null = null;
  private immediate: NodeJS.Immediate | null = null;

  constructor(
    private readonly root: RootDatabase,
    private readonly wait: 'turn' | number,
  ) {}

  add<T>(work: () => T): Promise<T> {
    let entry!: Waiting;
    const done = new Promise<T>((resolve, reject) => {
      entry = { work, settle: (error, failed, result) => (failed ? reject(error) : resolve(result as T)) };
    });
    this.push(entry);
    return done;
  }

  push(entry: Waiting): void {
    this.waiting.push(entry);
    if (this.waiting.length >= BATCH_MAX) this.commitNow();
    else if (this.wait === 'turn') this.immediate ??= setImmediate(() => this.commitNow());
    else this.timer ??= setTimeout(() => this.commitNow(), this.wait);
  }

  commitNow(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
    const works = this.waiting;
    this.waiting = [];
    if (works.length > 0) commitTogether(this.root, works);
  }
}

interface Queues {
  turn: CommitQueue;
  window: CommitQueue;
}

const queues = new WeakMap<RootDatabase, Queues>();

function queuesOf(root: RootDatabase): Queues {
  let found = queues.get(root);
  if (!found) queues.set(root, (found = { turn: new CommitQueue(root, 'turn'), window: new CommitQueue(root, BATCH_WINDOW_MS) }));
  return found;
}

function noSync(root: RootDatabase): boolean {
  return (root as RootDatabase & { noSync?: boolean }).noSync === true;
}

/**
 * Commits a request's write that something waits for (its spend, which the answer waits for so the next request
 * sees it) at the end of this event-loop turn, with the others of the same turn (requests whose answers ended
 * together), and resolves once it is committed. Nothing waits longer than the turn; under load several requests'
 * spends share a commit. It does not take the background writes along: they would then commit one request's
 * worth at a time, where waiting out their window lets several requests share pages.
 *
 * Without fsync (the default) the commit runs synchronously: it only copies a few pages into the OS page cache,
 * where lmdb-js's asynchronous transaction hands the work to its write thread and back (65-170 µs of wall time and
 * 65-110 µs of CPU on this machine, most of a keyed request's extra latency when the answer waits for its spend).
 * Either way the data is committed when this resolves, so it survives kill -9. With fsync (TOLLGATE_FSYNC=true) each
 * commit waits for the disk, which must never block the event loop: the asynchronous transaction is used.
 */
export function commit<T>(root: RootDatabase, work: () => T): Promise<T> {
  if (!noSync(root)) return root.transaction(work);
  return queuesOf(root).turn.add(work);
}

/**
 * Commits a background write (nothing waits for it before answering: a request-log entry, a cache entry or hit)
 * with the others of the next `BATCH_WINDOW_MS`, in one transaction; resolves once it is committed. With fsync,
 * lmdb-js's asynchronous transaction (which batches the callbacks of one event-loop turn) is used as for `commit`.
 */
export function commitSoon<T>(root: RootDatabase, work: () => T): Promise<T> {
  if (!noSync(root)) return root.transaction(work);
  return queuesOf(root).window.add(work);
}

/**
 * `commitSoon` for a write nothing waits for (a request-log entry): no promise is made for it, and `failed` hears
 * its error. Settle with `commitWaiting` and `root.committed` (as `GovernanceStore.logWritesSettled` does).
 */
export function commitSoonUnawaited(root: RootDatabase, work: () => void, failed: (error: unknown) => void): void {
  if (!noSync(root)) void root.transaction(work).catch(failed);
  else queuesOf(root).window.push({ work, settle: (error, didFail) => (didFail ? failed(error) : undefined) });
}

/** Commits the writes still waiting for their turn or window now (before the environment closes). */
export function commitWaiting(root: RootDatabase): void {
  const found = queues.get(root);
  found?.turn.commitNow();
  found?.window.commitNow();
}
