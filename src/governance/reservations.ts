/**
 * Money promised to requests in flight, per account (`key:<id>`, `team:<id>`). A request reserves its
 * upper-bound cost before the call and releases it once its real cost is committed, so concurrent requests
 * see each other's claims and cannot overspend a budget together. Check and reserve happen in one synchronous
 * step, which the single-threaded event loop makes atomic.
 */
export class Reservations {
  private readonly held = new Map<string, number>();

  reserved(account: string): number {
    return this.held.get(account) ?? 0;
  }

  /** Reserves `amount` on every account, or on none. Returns a release function (idempotent). */
  reserve(accounts: string[], amount: number): () => void {
    for (const account of accounts) this.held.set(account, this.reserved(account) + amount);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const account of accounts) {
        const left = this.reserved(account) - amount;
        // Float residue below a billionth of a dollar is nothing held.
        if (left <= 1e-9) this.held.delete(account);
        else this.held.set(account, left);
      }
    };
  }
}
