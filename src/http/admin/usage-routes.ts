import type { FastifyInstance } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import { addCounts, emptyCounts, USAGE_DIMENSIONS, USAGE_INTERVALS, type UsageCounts, type UsageDimension, type UsageInterval } from '../../governance/usage-rollups.js';
import type { AdminDeps } from './admin-deps.js';
import { parseTime } from './log-filters.js';
import { queryString } from './request-body.js';

const DAY_MS = 86_400_000;
/** Widest range per interval: a year of hours, ten years of days. */
const MAX_RANGE_MS: Record<UsageInterval, number> = { hour: 366 * DAY_MS, day: 3_660 * DAY_MS };

function oneOf<T extends string>(raw: string | undefined, allowed: readonly T[], fallback: T, name: string): T {
  if (raw === undefined || raw === '') return fallback;
  if ((allowed as readonly string[]).includes(raw)) return raw as T;
  throw gatewayError('invalid_query', `${name} must be one of ${allowed.join(', ')}, got '${raw.slice(0, 40)}'.`, { param: name });
}

/**
 * GET /api/usage?group_by=key|team|model|provider|route&interval=hour|day&from=&to=: spend, tokens, requests and
 * errors per group and interval, from the rollups (never a scan of the log). Default: the last 30 days by day.
 */
export function registerUsageRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/usage', async (request) => {
    const groupBy = oneOf<UsageDimension>(queryString(request, 'group_by'), USAGE_DIMENSIONS, 'model', 'group_by');
    const interval = oneOf<UsageInterval>(queryString(request, 'interval'), USAGE_INTERVALS, 'day', 'interval');
    const to = parseTime(request, 'to') ?? Date.now() + 1;
    const from = parseTime(request, 'from') ?? to - 30 * DAY_MS;
    if (from >= to) throw gatewayError('invalid_query', 'from must be before to.', { param: 'from' });
    if (to - from > MAX_RANGE_MS[interval]) throw gatewayError('invalid_query', `The range is too wide for interval=${interval}; use interval=day or a shorter range.`, { param: 'from' });
    const data = deps.usage.query({ group_by: groupBy, interval, from, to });
    const totals = new Map<string, UsageCounts>();
    for (const row of data) {
      let total = totals.get(row.group);
      if (!total) totals.set(row.group, (total = emptyCounts()));
      addCounts(total, row);
    }
    return {
      object: 'usage',
      group_by: groupBy,
      interval,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      data,
      totals: [...totals].map(([group, counts]) => ({ group, ...counts })).sort((a, b) => b.spend_usd - a.spend_usd || b.requests - a.requests),
    };
  });
}
