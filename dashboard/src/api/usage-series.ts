import type { Usage, UsageNumbers } from './types.js';

export interface UsageSeries extends Record<keyof UsageNumbers, number[]> {
  /** Bucket starts, epoch seconds, every bucket of the range (empty ones as zeros, so lines do not skip). */
  times: number[];
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Every hour or day of the answer's range (epoch seconds) and where a row's bucket sits among them: charts get a
 * point for each bucket, zero where nothing ran, so one busy day does not stretch across the whole axis.
 */
export function usageBuckets(usage: Usage): { times: number[]; indexOf(start: string): number | undefined } {
  if (usage.interval === 'day' && usage.tz !== undefined && usage.tz !== 'UTC') return localDays(usage);
  const step = usage.interval === 'hour' ? HOUR : DAY;
  const first = Math.floor(Date.parse(usage.from) / step) * step;
  const last = Math.floor(Date.parse(usage.to) / step) * step;
  const times: number[] = [];
  const index = new Map<number, number>();
  for (let t = first; t <= last; t += step) {
    index.set(t, times.length);
    times.push(t / 1000);
  }
  return { times, indexOf: (start) => index.get(Math.floor(Date.parse(start) / step) * step) };
}

/**
 * The local days of an answer counted in a zone (the browser's, which the page sent): each from its local midnight,
 * 23 or 25 hours long when the clocks change, a row's bucket found by its local date.
 */
function localDays(usage: Usage): { times: number[]; indexOf(start: string): number | undefined } {
  const dayOf = (date: Date): string => `${date.getFullYear()}-${date.getMonth() + 1}-${date.getDate()}`;
  const from = new Date(Date.parse(usage.from));
  const end = Date.parse(usage.to);
  const times: number[] = [];
  const index = new Map<string, number>();
  for (let day = new Date(from.getFullYear(), from.getMonth(), from.getDate()); day.getTime() < end; day = new Date(day.getFullYear(), day.getMonth(), day.getDate() + 1)) {
    index.set(dayOf(day), times.length);
    times.push(day.getTime() / 1000);
  }
  return { times, indexOf: (start) => index.get(dayOf(new Date(Date.parse(start)))) };
}

/**
 * Sums `/api/usage` rows across groups into one series per number, with a point for every hour or day. An answer cut
 * to its top groups sums the rest in `others`, apart from `data`: it is added once, so the whole is counted.
 */
export function usageOverTime(usage: Usage): UsageSeries {
  const { times, indexOf } = usageBuckets(usage);
  const series: UsageSeries = { times, requests: [], errors: [], spend_usd: [], input_tokens: [], output_tokens: [] };
  for (const name of ['requests', 'errors', 'spend_usd', 'input_tokens', 'output_tokens'] as const) series[name] = times.map(() => 0);
  for (const row of [...usage.data, ...(usage.others?.data ?? [])]) {
    const at = indexOf(row.start);
    if (at === undefined) continue;
    for (const name of ['requests', 'errors', 'spend_usd', 'input_tokens', 'output_tokens'] as const) series[name][at]! += row[name];
  }
  return series;
}

/** Every group's numbers added up, the rest an answer summed in `others` once. */
export function usageTotals(usage: Usage): UsageNumbers {
  const sum: UsageNumbers = { requests: 0, errors: 0, spend_usd: 0, input_tokens: 0, output_tokens: 0 };
  for (const row of [...usage.totals, ...(usage.others ? [usage.others.totals] : [])]) for (const name of Object.keys(sum) as (keyof UsageNumbers)[]) sum[name] += row[name];
  return sum;
}
