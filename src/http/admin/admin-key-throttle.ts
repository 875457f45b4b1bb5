/**
 * Wrong admin keys one client address may send within WINDOW_MS before it is refused until the window ends: enough
 * that a script with a stale key does not lock its address out at once, few enough that guessing a key is hopeless
 * (without it, thousands of guesses a second).
 */
const MAX_FAILURES = 30;
const WINDOW_MS = 60_000;
/** Addresses remembered at most (a flood from many addresses forgets the oldest rather than grow). */
const MAX_ADDRESSES = 10_000;

/**
 * Guessing the admin key over the network: after MAX_FAILURES (30) wrong keys from one address in a minute (sign-in or
 * `Authorization: Bearer`), that address gets 429 until the minute is over, whatever it sends. A right key from it
 * clears its count.
 */
export class AdminKeyThrottle {
  private readonly failures = new Map<string, { count: number; since: number }>();

  /** Seconds until the address may try again, or null when it may try now. */
  blockedFor(address: string, now = Date.now()): number | null {
    const entry = this.failures.get(address);
    if (!entry) return null;
    if (now - entry.since >= WINDOW_MS) {
      this.failures.delete(address);
      return null;
    }
    return entry.count >= MAX_FAILURES ? Math.max(1, Math.ceil((entry.since + WINDOW_MS - now) / 1000)) : null;
  }

  failed(address: string, now = Date.now()): void {
    const entry = this.failures.get(address);
    if (entry && now - entry.since < WINDOW_MS) {
      entry.count++;
      return;
    }
    if (this.failures.size >= MAX_ADDRESSES) this.failures.delete(this.failures.keys().next().value as string);
    this.failures.set(address, { count: 1, since: now });
  }

  succeeded(address: string): void {
    this.failures.delete(address);
  }
}
