/**
 * Request coalescing for the exact tier: the answers being fetched from a provider right now, by exact cache key (which
 * holds the request's whole scope: team or key, namespace, provider key, forwarded headers, model or route). A request
 * that misses while an identical one is being answered waits for that answer instead of buying it again.
 *
 * Every entry belongs to one leader (the request calling the provider) and is removed when that leader ends, however it
 * ends (answered, failed, cancelled by its client): `finish` is its only way out. A waiter waits at most `waitMs`, and
 * never past its leader's end: each one is told once, with the answer or with null (go to the provider yourself).
 */
export class InFlight<T> {
  private readonly flights = new Map<string, Set<Waiter<T>>>();

  constructor(private readonly waitMs: number) {}

  /** Leaders running now (GET /api/cache). */
  get size(): number {
    return this.flights.size;
  }

  /** Requests waiting for a leader now (GET /api/cache). */
  get waiting(): number {
    let count = 0;
    for (const waiters of this.flights.values()) count += waiters.size;
    return count;
  }

  has(key: string): boolean {
    return this.flights.has(key);
  }

  /**
   * Makes the caller the leader of `key` when nobody is: returns how it ends its flight (once; later calls do nothing),
   * or null when another request already leads (the caller then calls the provider on its own, uncoalesced).
   */
  lead(key: string): ((answer: T | null) => void) | null {
    if (this.flights.has(key)) return null;
    const waiters = new Set<Waiter<T>>();
    this.flights.set(key, waiters);
    let finished = false;
    return (answer) => {
      if (finished) return;
      finished = true;
      if (this.flights.get(key) === waiters) this.flights.delete(key);
      for (const waiter of waiters) waiter.tell(answer);
      waiters.clear();
    };
  }

  /**
   * Waits for the leader of `key`: `done` is called once, with its answer, or with null when it ended without one or
   * did not end within `waitMs`. Returns how the waiter leaves early (its client went away), or null when no leader
   * runs (`done` is then never called).
   */
  wait(key: string, done: (answer: T | null) => void): (() => void) | null {
    const waiters = this.flights.get(key);
    if (!waiters) return null;
    const waiter = new Waiter(done, () => waiters.delete(waiter), this.waitMs);
    waiters.add(waiter);
    return () => waiter.leave();
  }
}

/** One request waiting for a leader's answer: told once, by the leader or by its own timer. */
class Waiter<T> {
  private timer: NodeJS.Timeout | null;

  constructor(
    private readonly done: (answer: T | null) => void,
    private readonly remove: () => void,
    waitMs: number,
  ) {
    this.timer = setTimeout(() => this.tell(null), waitMs);
    // A waiter never keeps the process alive on its own (a shutdown ends its request anyway).
    this.timer.unref();
  }

  tell(answer: T | null): void {
    if (this.timer === null) return;
    this.leave();
    this.done(answer);
  }

  leave(): void {
    if (this.timer === null) return;
    clearTimeout(this.timer);
    this.timer = null;
    this.remove();
  }
}
