/**
 * In-memory sliding-window limits (requests per minute, tokens per minute), one window per key.
 *
 * Each key keeps a short log of usage, coalesced into slots of 1/60 of the window: a slot holds the amount
 * taken during that stretch and the time of its LAST take, and leaves the window one full window after that
 * last take. So a key holds at most ~61 slots whatever its traffic (bounded memory), the limit is never
 * exceeded over any rolling window (a slot leaves late rather than early, by at most 1/60 of the window), and
 * takes made within one slot free up together. Keys idle for more than two windows are swept.
 *
 * A key may also hold amounts for work in flight (tokens a request may still use, see `tryHoldAll`): they count
 * against the limit like used amounts, are not in the log (they do not leave with time), and are released when the
 * work ends, which then records what it really used with `add`.
 */
export interface WindowState {
  limit: number;
  remaining: number;
  /** ms until the window frees enough for one more unit (for a refused take: enough for what it asked); 0 when it fits now */
  resetMs: number;
  /** ms until everything now in the window has left it (the window is back to its full limit); 0 when empty */
  fullResetMs: number;
}

/** Slots per window: the granularity of the log. */
const SLOTS = 60;
/** Run a sweep of idle keys every this many operations. */
const SWEEP_EVERY = 1024;

class KeyWindow {
  /** Time of each slot's last take, oldest first from `head`. */
  times: number[] = [];
  amounts: number[] = [];
  head = 0;
  /** When the newest slot opened (takes within a slot's span coalesce into it). */
  newestOpened = -Infinity;
  used = 0;
  /** Held for work in flight (not in the log: released, not aged out). */
  held = 0;
  lastSeen = 0;

  prune(now: number, windowMs: number): void {
    while (this.head < this.times.length && now - (this.times[this.head] as number) >= windowMs) {
      this.used -= this.amounts[this.head] as number;
      this.head++;
    }
    if (this.head === this.times.length) {
      this.times = [];
      this.amounts = [];
      this.head = 0;
      this.used = 0;
      this.newestOpened = -Infinity;
    } else if (this.head >= 32) {
      this.times = this.times.slice(this.head);
      this.amounts = this.amounts.slice(this.head);
      this.head = 0;
      // Re-add, so fractional amounts cannot drift.
      this.used = this.amounts.reduce((sum, amount) => sum + amount, 0);
    }
  }

  record(now: number, amount: number, slotMs: number): void {
    const last = this.times.length - 1;
    if (last >= this.head && now - this.newestOpened < slotMs) {
      this.amounts[last] = (this.amounts[last] as number) + amount;
      this.times[last] = Math.max(this.times[last] as number, now);
    } else {
      this.times.push(now);
      this.amounts.push(amount);
      this.newestOpened = now;
    }
    this.used += amount;
  }

  /** ms until at most `allowed` is in use (Infinity when `allowed` < 0: never). */
  msUntilUsedAtMost(allowed: number, now: number, windowMs: number): number {
    if (this.used <= allowed) return 0;
    if (allowed < 0) return Infinity;
    let used = this.used;
    for (let i = this.head; i < this.times.length; i++) {
      used -= this.amounts[i] as number;
      if (used <= allowed) return Math.max(0, (this.times[i] as number) + windowMs - now);
    }
    return 0;
  }

  fullResetMs(now: number, windowMs: number): number {
    const last = this.times.length - 1;
    return last >= this.head ? Math.max(0, (this.times[last] as number) + windowMs - now) : 0;
  }
}

export class SlidingWindowLimiter {
  private readonly windows = new Map<string, KeyWindow>();
  private readonly slotMs: number;
  private operations = 0;

  constructor(
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {
    if (!(windowMs > 0)) throw new RangeError('windowMs must be positive');
    this.slotMs = windowMs / SLOTS;
  }

  /** Takes `amount` if it fits under `limit` within the last window; otherwise takes nothing. */
  tryTake(key: string, limit: number, amount = 1): { allowed: boolean; state: WindowState } {
    const now = this.now();
    this.tick();
    const window = this.windowFor(key, now);
    const allowed = window.used + amount <= limit;
    if (allowed && amount > 0) window.record(now, amount, this.slotMs);
    return { allowed, state: this.describe(window, limit, now, allowed ? 1 : amount) };
  }

  /**
   * Takes `amount` under every (key, limit) pair, or under none: a request counted per key, per key+model and
   * per team must not use up one limit when another refuses it. `blocked` is the index of the first refusal.
   */
  tryTakeAll(entries: ReadonlyArray<{ key: string; limit: number }>, amount = 1): { allowed: boolean; states: WindowState[]; blocked: number } {
    const now = this.now();
    this.tick();
    const windows = entries.map((entry) => this.windowFor(entry.key, now));
    const blocked = entries.findIndex((entry, i) => (windows[i] as KeyWindow).used + amount > entry.limit);
    const allowed = blocked === -1;
    if (allowed && amount > 0) for (const window of new Set(windows)) window.record(now, amount, this.slotMs);
    const states = entries.map((entry, i) => this.describe(windows[i] as KeyWindow, entry.limit, now, allowed ? 1 : amount));
    return { allowed, states, blocked };
  }

  /**
   * Holds each entry's `amount` under its limit, counted with what its window used, or holds nothing when any entry
   * does not fit (`blocked` is the first that does not). What is held counts against the limit until `release`
   * (idempotent), whatever the time: a request's estimated tokens, held while it runs, so that concurrent requests
   * see each other's claims. `amount` is per entry, so one may be capped at its own limit.
   */
  tryHoldAll(entries: ReadonlyArray<{ key: string; limit: number; amount: number }>): { allowed: boolean; states: WindowState[]; blocked: number; release: () => void } {
    const now = this.now();
    this.tick();
    const windows = entries.map((entry) => this.windowFor(entry.key, now));
    const blocked = entries.findIndex((entry, i) => {
      const window = windows[i] as KeyWindow;
      return window.used + window.held + entry.amount > entry.limit;
    });
    const allowed = blocked === -1;
    if (allowed) entries.forEach((entry, i) => ((windows[i] as KeyWindow).held += entry.amount));
    const states = entries.map((entry, i) => this.describe(windows[i] as KeyWindow, entry.limit, now, allowed ? 1 : entry.amount));
    let released = !allowed;
    const release = (): void => {
      if (released) return;
      released = true;
      entries.forEach((entry, i) => {
        const window = windows[i] as KeyWindow;
        window.held = Math.max(0, window.held - entry.amount);
        window.lastSeen = this.now();
      });
    };
    return { allowed, states, blocked, release };
  }

  /**
   * What `tryHoldAll` would answer for these entries, read at one instant without holding anything: each state's
   * `resetMs` is the wait until its window has room for the entry's `amount` beside what is used and held (0 when it
   * fits now). For a request refused by another limit, whose wait must also cover these windows.
   */
  holdStates(entries: ReadonlyArray<{ key: string; limit: number; amount: number }>): WindowState[] {
    const now = this.now();
    return entries.map((entry) => {
      const window = this.windows.get(entry.key);
      if (!window) return { limit: entry.limit, remaining: Math.max(0, Math.floor(entry.limit)), resetMs: entry.amount <= entry.limit ? 0 : this.windowMs, fullResetMs: 0 };
      window.prune(now, this.windowMs);
      return this.describe(window, entry.limit, now, entry.amount);
    });
  }

  /** Records usage after the fact (tokens known only when the answer ends); may exceed the limit. */
  add(key: string, amount: number): void {
    if (!(amount > 0)) return;
    const now = this.now();
    this.tick();
    this.windowFor(key, now).record(now, amount, this.slotMs);
  }

  state(key: string, limit: number): WindowState {
    return this.stateAt(key, limit, this.now());
  }

  /** The state of every (key, limit) pair at one instant, so windows filled together compare as equals. */
  states(entries: ReadonlyArray<{ key: string; limit: number }>): WindowState[] {
    const now = this.now();
    return entries.map((entry) => this.stateAt(entry.key, entry.limit, now));
  }

  private stateAt(key: string, limit: number, now: number): WindowState {
    const window = this.windows.get(key);
    if (!window) return { limit, remaining: Math.max(0, Math.floor(limit)), resetMs: limit >= 1 ? 0 : this.windowMs, fullResetMs: 0 };
    window.prune(now, this.windowMs);
    return this.describe(window, limit, now, 1);
  }

  /** Drops keys idle for more than two windows. Called every few operations; callable on a timer too. */
  sweep(): void {
    const now = this.now();
    for (const [key, window] of this.windows) {
      // A window holding for work in flight (a long stream) stays, or its release would go nowhere.
      if (now - window.lastSeen > 2 * this.windowMs && window.held === 0) this.windows.delete(key);
    }
  }

  /** How many keys are held (for tests and metrics). */
  get size(): number {
    return this.windows.size;
  }

  private tick(): void {
    if (++this.operations >= SWEEP_EVERY) {
      this.operations = 0;
      this.sweep();
    }
  }

  private windowFor(key: string, now: number): KeyWindow {
    let window = this.windows.get(key);
    if (!window) {
      window = new KeyWindow();
      this.windows.set(key, window);
    } else {
      window.prune(now, this.windowMs);
    }
    window.lastSeen = now;
    return window;
  }

  /**
   * `wanted`: the amount resetMs waits room for. What is held leaves when its work ends, not with time, so the
   * wait is for the log to make room beside it; when even an empty log would not (the holds alone are too many),
   * the best hint is when the window is empty again, or one window from now, as the holds will be used by then.
   */
  private describe(window: KeyWindow, limit: number, now: number, wanted: number): WindowState {
    // Holds are used when their work ends and leave a window after that: not whole again for a window at least.
    const logResetMs = window.fullResetMs(now, this.windowMs);
    const fullResetMs = window.held > 0 ? Math.max(logResetMs, this.windowMs) : logResetMs;
    let resetMs = window.msUntilUsedAtMost(limit - window.held - wanted, now, this.windowMs);
    // More than the limit can ever hold: the best hint is when the window is empty again.
    if (resetMs === Infinity) resetMs = fullResetMs > 0 ? fullResetMs : this.windowMs;
    return { limit, remaining: Math.max(0, Math.floor(limit - window.used - window.held)), resetMs, fullResetMs };
  }
}
