import type { FastifyInstance } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import { isoInZone } from '../../core/time-zones.js';
import { addCounts, emptyCounts, localDayBounds, roundSpend, rowsByLocalDay, USAGE_DIMENSIONS, USAGE_INTERVALS, type UsageCounts, type UsageDimension, type UsageInterval, type UsageRow } from '../../governance/usage-rollups.js';
import type { AdminDeps } from './admin-deps.js';
import { parseTime, parseTimeZone } from './log-filters.js';
import { onlyQueryParams, queryString } from './request-body.js';

const DAY_MS = 86_400_000;
/** Widest range per interval: a year of hours, ten years of days. */
const MAX_RANGE_MS: Record<UsageInterval, number> = { hour: 366 * DAY_MS, day: 3_660 * DAY_MS };
/** Local days are summed from hourly rollups: a year of them (and a day for the first one's start). */
const MAX_LOCAL_DAYS_MS = 367 * DAY_MS;
/** Zones whose days are the UTC days the daily rollups keep. */
const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'Etc/GMT', 'GMT', 'Etc/UCT', 'UCT', 'Etc/Universal', 'Universal', 'Etc/Zulu', 'Zulu', 'Etc/GMT0', 'Etc/GMT+0', 'Etc/GMT-0', 'GMT0', 'GMT+0', 'GMT-0', 'Etc/Greenwich', 'Greenwich']);

const USAGE_PARAMS = new Set(['group_by', 'interval', 'from', 'to', 'tz']);

function oneOf<T extends string>(raw: string | undefined, allowed: readonly T[], fallback: T, name: string): T {
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw gatewayError('invalid_query', `${name} must be one of ${allowed.join(', ')}, got '${raw.slice(0, 40)}'.`, { param: name });
}

/**
 * GET /api/usage?group_by=key|team|model|provider|route&interval=hour|day&from=&to=&tz=: spend, tokens, requests and
 * errors per group and interval, from the rollups (never a scan of the log). Default: the last 30 days by day. With
 * `tz` (an IANA zone), days are that zone's local days, summed from the hourly rollups, and every bucket is named
 * by its local start with the zone's offset.
 */
export function registerUsageRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/usage', async (request) => {
    onlyQueryParams(request, USAGE_PARAMS);
    const groupBy = oneOf<UsageDimension>(queryString(request, 'group_by'), USAGE_DIMENSIONS, 'model', 'group_by');
    const interval = oneOf<UsageInterval>(queryString(request, 'interval'), USAGE_INTERVALS, 'day', 'interval');
    const zone = parseTimeZone(request);
    const to = parseTime(request, 'to') ?? Date.now() + 1;
    const from = parseTime(request, 'from') ?? to - 30 * DAY_MS;
    if (from >= to) throw gatewayError('invalid_query', 'from must be before to.', { param: 'from' });
    if (to - from > MAX_RANGE_MS[interval]) throw gatewayError('invalid_query', `The range is too wide for interval=${interval}; use interval=day or a shorter range.`, { param: 'from' });
    let data: UsageRow[];
    if (zone !== undefined && interval === 'day' && !UTC_ZONES.has(zone)) {
      if (to - from > MAX_LOCAL_DAYS_MS) throw gatewayError('invalid_query', `The range is too wide for local days in ${zone} (at most 366 days, summed from hourly rollups); use a shorter range, or tz=UTC.`, { param: 'from' });
      const bounds = localDayBounds(from, to, zone);
      const hours = deps.usage.query({ group_by: groupBy, interval: 'hour', from: bounds[0] as number, to: bounds[bounds.length - 1] as number });
      data = rowsByLocalDay(hours, bounds, zone);
    } else {
      data = deps.usage.query({ group_by: groupBy, interval, from, to });
      if (zone !== undefined) data = data.map((row) => ({ ...row, start: isoInZone(Date.parse(row.start), zone) }));
    }
    const totals = new Map<string, UsageCounts>();
    for (const row of data) {
      let total = totals.get(row.group);
      if (!total) totals.set(row.group, (total = emptyCounts()));
      addCounts(total, row);
    }
    const written = (at: number): string => (zone === undefined ? new Date(at).toISOString() : isoInZone(at, zone));
    return {
      object: 'usage',
      group_by: groupBy,
      interval,
      tz: zone ?? 'UTC',
      from: written(from),
      to: written(to),
      data,
      totals: [...totals].map(([group, counts]) => ({ group, ...counts, spend_usd: roundSpend(counts.spend_usd) })).sort((a, b) => b.spend_usd - a.spend_usd || b.requests - a.requests),
    };
  });
}
