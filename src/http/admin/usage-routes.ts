import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import { isoInZone } from '../../core/time-zones.js';
import { localDayBounds, USAGE_DIMENSIONS, USAGE_INTERVALS, type UsageDimension, type UsageInterval } from '../../governance/usage-rollups.js';
import { usageReport, type LocalDays, type UsageOrder } from '../../governance/usage-report.js';
import { parsePageLimit } from './paging.js';
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

const USAGE_PARAMS = new Set(['group_by', 'interval', 'from', 'to', 'tz', 'limit', 'order', 'after']);
/** `order`: the top groups by spend, or pages of every group in name order (`after` the previous page's `next_after`). */
const USAGE_ORDERS = ['spend', 'group'] as const;
/** Groups an answer holds at most (the top ones by spend, within usage-report's MAX_ROWS; the rest are summed in `others`). */
const MAX_GROUPS = 1_000;

function oneOf<T extends string>(raw: string | undefined, allowed: readonly T[], fallback: T, name: string): T {
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw gatewayError('invalid_query', `${name} must be one of ${allowed.join(', ')}, got '${raw.slice(0, 40)}'.`, { param: name });
}

/** `order` and `after` of a query: `after` (a group name, as `next_after` gave it) pages only in name order. */
function parseOrder(request: FastifyRequest): UsageOrder {
  const by = oneOf(queryString(request, 'order'), USAGE_ORDERS, 'spend', 'order');
  const after = queryString(request, 'after');
  if (after !== undefined && by !== 'group') throw gatewayError('invalid_query', 'after pages through groups in name order: it goes with order=group.', { param: 'after' });
  if (after !== undefined && after.length > 500) throw gatewayError('invalid_query', 'after is longer than 500 characters.', { param: 'after' });
  return by === 'spend' ? { by } : { by, after: after === undefined || after === '' ? null : after };
}

/**
 * GET /api/usage?group_by=key|team|model|provider|route&interval=hour|day&from=&to=&tz=: spend, tokens, requests and
 * errors per group and interval, from the rollups (never a scan of the log). Default: the last 30 days by day. With
 * `tz` (an IANA zone), days are that zone's local days, summed from the hourly rollups, and every bucket is named
 * by its local start with the zone's offset. At most `limit` groups: the top ones by spend, or with `order=group` a page
 * of them in name order (`after` the previous page's `next_after`); the rest summed in `others`.
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
    const limit = queryString(request, 'limit') === undefined ? MAX_GROUPS : parsePageLimit(queryString(request, 'limit'), MAX_GROUPS);
    const order = parseOrder(request);
    let days: LocalDays | null = null;
    if (zone !== undefined && interval === 'day' && !UTC_ZONES.has(zone)) {
      if (to - from > MAX_LOCAL_DAYS_MS) throw gatewayError('invalid_query', `The range is too wide for local days in ${zone} (at most 366 days, summed from hourly rollups); use a shorter range, or tz=UTC.`, { param: 'from' });
      days = { bounds: localDayBounds(from, to, zone), zone };
    }
    const scanned = days ? { group_by: groupBy, interval: 'hour' as const, from: days.bounds[0] as number, to: days.bounds[days.bounds.length - 1] as number } : { group_by: groupBy, interval, from, to };
    const report = await usageReport(deps.usage, scanned, limit, days, order);
    // Days of a zone that are UTC days: named by their start in the zone.
    if (zone !== undefined && !days) {
      const names = new Map<string, string>();
      for (const row of [...report.data, ...(report.others?.data ?? [])]) {
        let name = names.get(row.start);
        if (name === undefined) names.set(row.start, (name = isoInZone(Date.parse(row.start), zone)));
        row.start = name;
      }
    }
    const written = (at: number): string => (zone === undefined ? new Date(at).toISOString() : isoInZone(at, zone));
    return {
      object: 'usage',
      group_by: groupBy,
      interval,
      tz: zone ?? 'UTC',
      from: written(from),
      to: written(to),
      data: report.data,
      totals: report.totals,
      groups: report.groups,
      truncated: report.truncated,
      ...(report.others ? { others: report.others } : {}),
      ...(report.next_after !== undefined ? { next_after: report.next_after } : {}),
    };
  });
}
