import type { FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import type { RequestLogFilter } from '../../governance/request-log-query.js';
import { canonicalTimeZone, instantOf, startOfDate } from '../../core/time-zones.js';
import { queryString } from './request-body.js';

/** An ISO 8601 date: `2026-11-29`. */
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/**
 * An ISO 8601 (RFC 3339) date and time: `2026-11-29T10:00`, seconds and a fraction optional, `T` or a space, then
 * `Z`, an offset (`+01:00`, `+0100`) or nothing.
 */
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|([+-])(\d{2}):?(\d{2}))?$/i;

const TIME_RULE = 'an ISO 8601 date (2026-11-29) or date-time (2026-11-29T10:00:00Z, 2026-11-29T11:00+01:00), or epoch milliseconds';

/**
 * `tz` of a query: an IANA time zone (`Europe/Berlin`) that dates and times without an offset are read in, and that
 * `/api/usage` counts days in. Undefined when absent; an unknown zone is a 400.
 */
export function parseTimeZone(request: FastifyRequest): string | undefined {
  const raw = queryString(request, 'tz');
  if (raw === undefined || raw === '') return undefined;
  const zone = canonicalTimeZone(raw);
  if (zone === undefined) throw gatewayError('invalid_query', `tz must be an IANA time zone such as Europe/Berlin or UTC, got '${raw.slice(0, 60)}'.`, { param: 'tz' });
  return zone;
}

/**
 * A time in the query, the one rule of every `from` and `to`: epoch milliseconds, or an ISO 8601 date-time with `Z`
 * or an offset; a date-time without one is wall-clock time in `tz` (UTC when the query has none), and a date alone
 * is the start of that day in `tz` (else UTC). Anything else (`11/29/2026`, `yesterday`, `2026-02-30`, a local time
 * that clocks skipped) is a 400 naming the parameter: `Date.parse` read such text in the server's time zone, or
 * rolled an impossible date over into the next month.
 */
export function parseTime(request: FastifyRequest, name: string): number | undefined {
  const raw = queryString(request, name);
  if (raw === undefined || raw === '') return undefined;
  const refuse = (why = `must be ${TIME_RULE}`): never => {
    throw gatewayError('invalid_query', `${name} ${why}, got '${raw.slice(0, 60)}'.`, { param: name });
  };
  if (/^\d{1,15}$/.test(raw)) {
    const ms = Number(raw);
    // 10^7 to 10^11 ms is January 1970 to March 1973, where no log reaches: such a number is epoch seconds (10 digits
    // today) or a date without its dashes (20261129), and read as milliseconds it would select 1970 without a word.
    if (ms >= 1e7 && ms < 1e11) refuse(`reads as epoch seconds or a date without dashes (a time in 1970 as epoch milliseconds); give epoch milliseconds (${raw}000 for those seconds) or ${TIME_RULE.replace(', or epoch milliseconds', '')}`);
    return ms;
  }
  const zone = parseTimeZone(request);
  const date = ISO_DATE.exec(raw);
  if (date) {
    const [year, month, day] = [Number(date[1]), Number(date[2]), Number(date[3])];
    if (!calendarDateHolds(year, month, day)) refuse('names a date that does not exist');
    return zone ? startOfDate(year, month, day, zone) : Date.UTC(year, month - 1, day);
  }
  const time = ISO_DATE_TIME.exec(raw);
  if (!time) return refuse();
  const [year, month, day, hour, minute, second] = [1, 2, 3, 4, 5, 6].map((at) => Number(time[at] ?? 0)) as [number, number, number, number, number, number];
  if (!calendarDateHolds(year, month, day)) refuse('names a date that does not exist');
  if (hour > 23 || minute > 59 || second > 59) refuse('names a time of day that does not exist');
  const fraction = time[7] ? Math.floor(Number(`0${time[7]}`) * 1000) : 0;
  const wall = Date.UTC(year, month - 1, day, hour, minute, second, fraction);
  if (time[8] !== undefined) {
    if (time[8].toUpperCase() === 'Z') return wall;
    const [offsetHours, offsetMinutes] = [Number(time[10]), Number(time[11])];
    if (offsetHours > 23 || offsetMinutes > 59) refuse('has an offset that does not exist');
    return wall - (time[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  }
  if (!zone) return wall;
  const at = instantOf(wall, zone);
  return at ?? refuse(`names a local time that does not exist in ${zone} (the clocks skipped it)`);
}

/** Whether a date exists: `Date.parse` rolls `2026-02-30` over to March 2 instead of refusing it, so a typo would select another day. */
function calendarDateHolds(year: number, month: number, day: number): boolean {
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
  // An unknown zone is refused even when no time needed it.
  parseTimeZone(request);
  const from = parseTime(request, 'from');
  const to = parseTime(request, 'to');
  if (from !== undefined && to !== undefined && from >= to) throw gatewayError('invalid_query', 'from must be before to.', { param: 'from' });
  if (from !== undefined) range.from = from;
  if (to !== undefined) range.to = to;
  return range;
}

/** The query parameters of the request-log filters (parseLogFilter). */
export const LOG_FILTER_PARAMS = ['from', 'to', 'tz', 'key_id', 'team_id', 'model', 'provider', 'route', 'status', 'q'] as const;

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
