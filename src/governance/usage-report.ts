import { isoInZone } from '../core/time-zones.js';
import { addCounts, emptyCounts, roundSpend, type UsageCounts, type UsageQuery, type UsageRow } from './usage-rollups.js';

/** Where rollup rows come from: the stored ones and those not written yet, visited in chunks. */
export interface UsageSource {
  scan(query: UsageQuery, visit: (start: number, group: string, counts: UsageCounts) => void): Promise<void>;
}

/** Local days: the bounds of the days (localDayBounds) hourly rows are summed into, and their zone. */
export interface LocalDays {
  bounds: readonly number[];
  zone: string;
}

export interface UsageReport {
  /** Rows of the groups kept, oldest first, then by group. */
  data: UsageRow[];
  /** Per group kept, most spend first (in name order with `order: group`). */
  totals: Array<UsageCounts & { group: string }>;
  /** Groups with usage in the range, kept or not. */
  groups: number;
  /** More groups than fit (`limit`, MAX_ROWS): `data` and `totals` hold the top ones by spend, `others` the rest summed. */
  truncated: boolean;
  others?: { groups: number; totals: UsageCounts; data: Array<UsageCounts & { start: string }> };
  /** With `order: group`: the last group of this page when more come after it (ask again with it as `after`), else null. */
  next_after?: string | null;
}

/**
 * Which groups an answer holds: the top ones by spend (a dashboard's view), or a page of them in name order after
 * `after` (a script that needs every key's usage: the top 1,000 leave the other 19,000 of 20,000 keys in one sum).
 */
export type UsageOrder = { by: 'spend' } | { by: 'group'; after: string | null };

type Total = UsageCounts & { group: string };

/**
 * Rows an answer holds at most (the kept groups' intervals with usage): `limit` bounds groups, not rows, and by hour
 * 1,000 groups busy for 30 days were 720,000 rows (a 99 MB answer, the event loop held for 2.3 s building and
 * writing it). 50,000 rows are about 7 MB; groups past them are summed in `others` like those past `limit`.
 */
export const MAX_ROWS = 50_000;

/** A group's totals as the first scan sums them, with how many rows (buckets with usage) it would add to the answer. */
type Ranked = Total & { rows: number; lastBucket: number };

function bySpend(a: Total, b: Total): number {
  return b.spend_usd - a.spend_usd || b.requests - a.requests;
}

function byGroup(a: Total, b: Total): number {
  return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
}

/** The index of the local day `at` falls in, or -1 outside them. */
function dayOf(bounds: readonly number[], at: number): number {
  if (at < (bounds[0] as number) || at >= (bounds[bounds.length - 1] as number)) return -1;
  let low = 0;
  let high = bounds.length - 2;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((bounds[mid] as number) <= at) low = mid;
    else high = mid - 1;
  }
  return low;
}

/**
 * The groups an answer keeps, at most `limit` of them and at most MAX_ROWS rows together: the top ones by spend (a
 * prefix of the ranking, so the groups kept are always the biggest), or the first in name order after `after`; null
 * when every group fits. `next` is the last group kept when groups after it were left out (order by group only).
 */
function keptGroups(ranked: Map<string, Ranked>, limit: number, order: UsageOrder): { kept: Set<string> | null; next: string | null } {
  let rows = 0;
  for (const total of ranked.values()) rows += total.rows;
  const after = order.by === 'group' ? order.after : null;
  if (after === null && ranked.size <= limit && rows <= MAX_ROWS) return { kept: null, next: null };
  const candidates = order.by === 'spend' ? [...ranked.values()].sort(bySpend) : [...ranked.values()].filter((total) => after === null || total.group > after).sort(byGroup);
  const kept = new Set<string>();
  rows = 0;
  for (const total of candidates) {
    if (kept.size >= limit || rows + total.rows > MAX_ROWS) break;
    kept.add(total.group);
    rows += total.rows;
  }
  const next = order.by === 'group' && kept.size < candidates.length ? (candidates[kept.size - 1]?.group ?? null) : null;
  return { kept, next };
}

/**
 * GET /api/usage's answer with at most `limit` groups and MAX_ROWS rows: 20,000 keys over 30 days was 600,000 rows
 * built at once (400 MB of heap, an 85 MB answer, the event loop held for 2.5 s; 18 s summing local days). A first
 * scan sums each group's totals and counts its rows, and keeps the top groups by spend that fit; a second builds
 * their rows and sums the other groups per interval into `others`, so charts of the whole still add up. Below both
 * bounds the answer is what it always was.
 */
export async function usageReport(source: UsageSource, query: UsageQuery, limit: number, days: LocalDays | null, order: UsageOrder = { by: 'spend' }): Promise<UsageReport> {
  const ranked = new Map<string, Ranked>();
  await source.scan(query, (start, group, counts) => {
    const bucket = days ? dayOf(days.bounds, start) : start;
    if (bucket === -1) return;
    let total = ranked.get(group);
    if (!total) ranked.set(group, (total = { group, ...emptyCounts(), rows: 0, lastBucket: -1 }));
    addCounts(total, counts);
    // Rows come oldest first (a group's hours of one local day one after another), so a new bucket is a new row; the
    // deltas not written yet come last and may count a bucket twice, which only keeps a group fewer.
    if (total.lastBucket !== bucket) {
      total.rows++;
      total.lastBucket = bucket;
    }
  });
  const { kept, next } = keptGroups(ranked, limit, order);
  const truncated = kept !== null && kept.size < ranked.size;

  // Rows by bucket (an interval's start, or a local day's index) and group; the other groups by bucket.
  const rows = new Map<number, Map<string, UsageCounts>>();
  const others = new Map<number, UsageCounts>();
  await source.scan(query, (start, group, counts) => {
    const bucket = days ? dayOf(days.bounds, start) : start;
    if (bucket === -1) return;
    if (kept && !kept.has(group)) {
      let sum = others.get(bucket);
      if (!sum) others.set(bucket, (sum = emptyCounts()));
      addCounts(sum, counts);
      return;
    }
    let byGroup = rows.get(bucket);
    if (!byGroup) rows.set(bucket, (byGroup = new Map()));
    let sum = byGroup.get(group);
    if (!sum) byGroup.set(group, (sum = emptyCounts()));
    addCounts(sum, counts);
  });
  // Named once per bucket: formatting a time in a zone costs some microseconds, and 1,000 groups share each bucket.
  const names = new Map<number, string>();
  const startOf = (bucket: number): string => {
    let name = names.get(bucket);
    if (name === undefined) names.set(bucket, (name = days ? isoInZone(days.bounds[bucket] as number, days.zone) : new Date(bucket).toISOString()));
    return name;
  };
  const data: UsageRow[] = [];
  for (const bucket of [...rows.keys()].sort((a, b) => a - b)) {
    const byGroup = rows.get(bucket) as Map<string, UsageCounts>;
    for (const group of [...byGroup.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))) {
      const counts = byGroup.get(group) as UsageCounts;
      data.push({ start: startOf(bucket), group, ...counts, spend_usd: roundSpend(counts.spend_usd) });
    }
  }
  const totals = new Map<string, UsageCounts>();
  for (const row of data) {
    let total = totals.get(row.group);
    if (!total) totals.set(row.group, (total = emptyCounts()));
    addCounts(total, row);
  }
  const report: UsageReport = {
    data,
    totals: [...totals].map(([group, counts]) => ({ group, ...counts, spend_usd: roundSpend(counts.spend_usd) })).sort(order.by === 'spend' ? bySpend : byGroup),
    groups: ranked.size,
    truncated,
    ...(order.by === 'group' ? { next_after: next } : {}),
  };
  if (kept && truncated) {
    const sum = emptyCounts();
    const otherRows = [...others].sort(([a], [b]) => a - b).map(([bucket, counts]) => {
      addCounts(sum, counts);
      return { start: startOf(bucket), ...counts, spend_usd: roundSpend(counts.spend_usd) };
    });
    report.others = { groups: ranked.size - kept.size, totals: { ...sum, spend_usd: roundSpend(sum.spend_usd) }, data: otherRows };
  }
  return report;
}
