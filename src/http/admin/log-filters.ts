import type { FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import type { RequestLogFilter } from '../../governance/request-log-query.js';
import { queryString } from './request-body.js';

/** An ISO 8601 date and time without a zone designator (`2026-11-01T09:30`, seconds and fractions optional). */
const ZONELESS_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/i;

/**
 * A time in the query: ISO 8601 or epoch milliseconds. A time without a zone is UTC, as a date alone is and as the
 * API answers: `Date.parse` reads it in the server's time zone, so the same query selected other hours on a
 * server whose TZ is not UTC.
 */
export function parseTime(request: FastifyRequest, name: string): number | undefined {
  const raw = queryString(request, name);
  if (raw === undefined || raw === '') return undefined;
  const ms = /^\d{1,15}$/.test(raw) ? Number(raw) : Date.parse(ZONELESS_TIME.test(raw) ? `${raw.replace(' ', 'T')}Z` : raw);
  if (!Number.isFinite(ms) || !calendarDateHolds(raw)) throw gatewayError('invalid_query', `${name} must be an ISO 8601 time or epoch milliseconds, got '${raw.slice(0, 60)}'.`, { param: name });
  return ms;
}

/**
 * Whether the date an ISO time names exists: `Date.parse` rolls `2026-02-30` over to March 2 instead of refusing it,
 * so a typo would select another day.
 */
function calendarDateHolds(raw: string): boolean {
  const date = /^(\d{4})-(\d{2})-(\d{2})/.exec(raw);
  if (!date) return true;
  const [year, month, day] = [Number(date[1]), Number(date[2]), Number(date[3])];
  const check = new Date(Date.UTC(year, month - 1, day));
  return check.getUTCFullYear() === year && check.getUTCMonth() === month - 1 && check.getUTCDate() === day;
}

/** The shape of a request log or audit entry id, which `next_before` hands out. */
const ENTRY_ID = /^\d{15}-\d{6}$/;

/**
 * The `before` cursor of a page: an entry id as `next_before` gave it. Anything else is refused (it used to be read
 * as no cursor, so a client with a mangled cursor got the first page again and looped).
 */
export function parseCursor(request: FastifyRequest): string | undefined {
  const raw = queryString(request, 'before');
  if (raw === undefined || raw === '') return undefined;
  if (!ENTRY_ID.test(raw)) throw gatewayError('invalid_query', `before must be an entry id as next_before gives it, got '${raw.slice(0, 60)}'.`, { param: 'before' });
  return raw;
}

function text(request: FastifyRequest, name: string): string | undefined {
  const raw = queryString(request, name);
  if (raw === undefined || raw === '') return undefined;
  if (raw.length > 500) throw gatewayError('invalid_query', `${name} is longer than 500 characters.`, { param: name });
  return raw;
}

/** `from` and `to` of a listing's query (a half-open range, so `from` must come first), each left out when absent. */
export function parseTimeRange(request: FastifyRequest): { from?: number; to?: number } {
  const range: { from?: number; to?: number } = {};
  const from = parseTime(request, 'from');
  const to = parseTime(request, 'to');
  if (from !== undefined && to !== undefined && from >= to) throw gatewayError('invalid_query', 'from must be before to.', { param: 'from' });
  if (from !== undefined) range.from = from;
  if (to !== undefined) range.to = to;
  return range;
}

/**
 * The request-log filters of `GET /api/logs` and its export: `from`, `to`, `key_id`, `team_id`, `model`, `provider`,
 * `route`, `status` (a code such as 429, or a class such as 4xx) and `q` (text in the error message).
 */
export function parseLogFilter(request: FastifyRequest): RequestLogFilter {
  const filter: RequestLogFilter = parseTimeRange(request);
  for (const name of ['key_id', 'team_id', 'model', 'provider', 'route', 'q'] as const) {
    const value = text(request, name);
    if (value !== undefined) filter[name] = value;
  }
  const status = queryString(request, 'status');
  if (status !== undefined && status !== '') {
    const exact = /^[1-5]\d\d$/.exec(status);
    const cls = /^([1-5])xx$/i.exec(status);
    if (exact) filter.status = Number(status);
    else if (cls) filter.status_class = Number(cls[1]);
    else throw gatewayError('invalid_query', `status must be an HTTP status (429) or a class (4xx), got '${status.slice(0, 20)}'.`, { param: 'status' });
  }
  return filter;
}
