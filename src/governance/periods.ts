import type { BudgetPeriod, PeriodUsage } from '../core/identity.js';

const DAY_MS = 86_400_000;

/** Midnight UTC of the day holding `at`. */
function startOfUtcDay(at: Date): number {
  return Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
}

/**
 * The calendar period (UTC) holding `at`: daily from 00:00Z, weekly from Monday 00:00Z, monthly from the 1st
 * 00:00Z. `end` is exclusive: at `end` the next period has begun. `total` never ends.
 */
export function periodBounds(period: BudgetPeriod, at: Date): { start: number; end: number | null } {
  switch (period) {
    case 'daily': {
      const start = startOfUtcDay(at);
      return { start, end: start + DAY_MS };
    }
    case 'weekly': {
      // getUTCDay: Sunday 0 .. Saturday 6; days since the last Monday: Monday 0 .. Sunday 6.
      const start = startOfUtcDay(at) - ((at.getUTCDay() + 6) % 7) * DAY_MS;
      return { start, end: start + 7 * DAY_MS };
    }
    case 'monthly':
      return { start: Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1), end: Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1) };
    case 'total':
      return { start: at.getTime(), end: null };
  }
}

/**
 * Zeroed counters of a period that starts now (a new record, or a changed `budget_period`): it runs from
 * `now` to the next calendar boundary.
 */
export function periodStartingNow(period: BudgetPeriod, now: Date): PeriodUsage {
  const { end } = periodBounds(period, now);
  return { spend: 0, requests: 0, period_start: now.toISOString(), period_resets_at: end === null ? null : new Date(end).toISOString() };
}

/**
 * The counters of a record whose `budget_period` changes to `period` at `now`. The new period runs from now to its
 * next calendar boundary, as a new record's does, but the spend already made is not forgotten (a reset would let
 * the key spend its whole budget again at once):
 * - to `total`, the spend of the whole life (`total_spend`, `total_requests`: `totals`, which a key keeps and a team
 *   does not) is the new period's;
 * - to another period, what of the spend fell within it cannot be told here (the usage rollups are written apart,
 *   and later; nor a team's whole life), so the current period's spend and requests are carried over: the safe side, never less than zero.
 *   They are dropped at the new period's first boundary, as any period's are.
 * `usage` is the record's usage as of `now` (an ended period already zeroed).
 */
export function periodChangedTo(period: BudgetPeriod, now: Date, usage: PeriodUsage, totals: { total_spend: number; total_requests: number } | null): PeriodUsage {
  const fresh = periodStartingNow(period, now);
  if (period === 'total' && totals !== null) return { ...fresh, spend: totals.total_spend, requests: totals.total_requests };
  return { ...fresh, spend: usage.spend, requests: usage.requests };
}

/** Zeroed counters of the calendar period holding `now`, for a record whose previous period has ended. */
export function periodHolding(period: BudgetPeriod, now: Date): PeriodUsage {
  const { start, end } = periodBounds(period, now);
  return { spend: 0, requests: 0, period_start: new Date(start).toISOString(), period_resets_at: end === null ? null : new Date(end).toISOString() };
}

/** Whether a period ending at `resetsAt` (ISO, null = never) is over at `now`. */
export function periodEnded(resetsAt: string | null, now: Date): boolean {
  return resetsAt !== null && now.getTime() >= resetTime(resetsAt);
}

/**
 * Reset times parsed once: a keyed request checks its key's and team's several times (auth, the reservation, the
 * spend commit), and parsing an ISO date each time was a few µs of every keyed request. Bounded: cleared when full.
 */
const parsedResets = new Map<string, number>();

function resetTime(resetsAt: string): number {
  let at = parsedResets.get(resetsAt);
  if (at === undefined) {
    if (parsedResets.size >= 4_096) parsedResets.clear();
    at = Date.parse(resetsAt);
    parsedResets.set(resetsAt, at);
  }
  return at;
}

/** USD kept to 1e-9 so that many small additions do not drift. */
export function roundUsd(value: number): number {
  return Math.round(value * 1e9) / 1e9;
}
