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
