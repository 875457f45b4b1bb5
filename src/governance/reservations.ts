/**
 * Money promised to requests in flight, per account (`key:<id>`, `team:<id>`). A request reserves its
 * upper-bound cost before the call and releases it once its real cost is committed, so concurrent requests
 * see each other's claims and cannot overspend a budget together. Check and reserve happen in one synchronous
 * step, which the single-threaded event loop makes atomic.
 *
 * Each account keeps the sum of its holds and how many there are: when the last hold is released the account
 * holds exactly nothing, whatever float residue the sums left, and releases may come in any order. (An
 * earlier version dropped an account whose sum fell to zero or below: with a negative amount among the holds,
 * releasing the others first "emptied" the account, and releasing the negative one then left its size held
 * for ever.) Amounts are never negative or non-finite: `reserve` refuses them.
 */
export class Reservations {
  private readonly held = new Map<string, { amount: number; holds: number }>();

  reserved(account: string): number {
    return this.held.get(account)?.amount ?? 0;
  }

  /** Every account with money held now, and how much: a copy, for tests and views. */
  snapshot(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [account, entry] of this.held) out[account] = entry.amount;
    return out;
  }

  /** Reserves `amount` on every account. Returns a release function (idempotent). */
  reserve(accounts: string[], amount: number): () => void {
    if (!Number.isFinite(amount) || amount < 0) throw new RangeError(`A reservation must be a finite amount of at least zero, not ${amount}.`);
    for (const account of accounts) {
      const entry = this.held.get(account);
      if (entry) {
        entry.amount += amount;
        entry.holds++;
      } else this.held.set(account, { amount, holds: 1 });
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const account of accounts) {
        const entry = this.held.get(account);
        if (!entry) continue;
        entry.holds--;
        if (entry.holds <= 0) this.held.delete(account);
        // Float residue of the other holds' sums is never below zero.
        else entry.amount = Math.max(0, entry.amount - amount);
      }
    };
  }
}
