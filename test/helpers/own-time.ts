import { readFileSync } from 'node:fs';

/**
 * Time measured on a clock that stands still while this thread waits for a CPU held by another process.
 *
 * A test that bounds how long work takes, or how long it holds the event loop, means the work this process does;
 * on a busy 2-core CI machine the same work reads two or three times longer on the wall clock, because the thread
 * sat in the scheduler's run queue while a neighbour (another test file, a `tsc` run) had the core. Linux counts
 * that wait per thread (/proc/thread-self/schedstat, second field, ns), so wall time less that wait is what the
 * thread would have taken alone: a quadratic loop, a handler that holds the loop, still reads its full length.
 * Where the file is missing (not Linux) the wait reads 0 and this is the wall clock, as before.
 */
const SCHEDSTAT = '/proc/thread-self/schedstat';
const counted = ((): boolean => {
  try {
    return readFileSync(SCHEDSTAT, 'utf8').split(' ').length >= 2;
  } catch {
    return false;
  }
})();

/** ms this thread has spent ready to run but waiting for a CPU, since it started (0 where not counted). */
function runQueueWaitMs(): number {
  if (!counted) return 0;
  return Number(readFileSync(SCHEDSTAT, 'utf8').split(' ')[1]) / 1e6;
}

/** performance.now() less the time this thread has waited for a CPU: differences are the thread's own time. */
export function ownNow(): number {
  // The wait is read on both sides of the clock: if the thread was preempted between a read and the clock, the
  // two disagree and the pair is taken again (else that one wait would be subtracted without being in the interval).
  for (;;) {
    const before = runQueueWaitMs();
    const now = performance.now();
    if (runQueueWaitMs() === before) return now - before;
  }
}

/** `run`'s result and how long it took on ownNow's clock. */
export async function ownTimed<T>(run: () => T | Promise<T>): Promise<{ value: T; ms: number }> {
  const started = ownNow();
  const value = await run();
  return { value, ms: ownNow() - started };
}

/**
 * The longest this thread's event loop was held while `work` ran: the gaps of a 10 ms timer beyond 10 ms, each
 * less the time the thread waited for a CPU in it (a gap the scheduler made is not the gateway holding the loop).
 */
export async function maxLoopHold<T>(work: () => Promise<T>): Promise<{ value: T; holdMs: number }> {
  let holdMs = 0;
  let last = ownNow();
  const probe = setInterval(() => {
    const now = ownNow();
    holdMs = Math.max(holdMs, now - last - 10);
    last = now;
  }, 10);
  try {
    return { value: await work(), holdMs };
  } finally {
    clearInterval(probe);
  }
}
