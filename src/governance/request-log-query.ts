import type { Database } from 'lmdb';
import type { RequestLogEntry } from './types.js';

/** What `GET /api/logs` (and its export) may filter on; every field narrows, all must hold. */
export interface RequestLogFilter {
  /** Epoch ms, inclusive. */
  from?: number;
  /** Epoch ms, exclusive. */
  to?: number;
  key_id?: string;
  team_id?: string;
  /** The model as requested, as the upstream served it, or as `<provider>/<upstream model>` (as /api/usage groups it). */
  model?: string;
  provider?: string;
  route?: string;
  /** An exact status (429) or a class (4 for 4xx). */
  status?: number;
  status_class?: number;
  /** Text the error message contains (case-insensitive). */
  q?: string;
}

export interface RequestLogQuery extends RequestLogFilter {
  limit?: number;
  /** A cursor: the page continues with entries older than this id. */
  before?: string;
}

export interface RequestLogPage {
  data: RequestLogEntry[];
  /** Where the next (older) page starts; null when nothing older can match. */
  next_before: string | null;
}

export const DEFAULT_LOG_LIMIT = 50;
export const MAX_LOG_LIMIT = 500;
/**
 * Entries one page looks at, at most: a filter that matches rarely returns a short (even empty) page with a cursor
 * instead of scanning the whole log, so a page costs a bounded time however large the log is.
 */
export const MAX_SCANNED_PER_PAGE = 10_000;
/**
 * Body characters (`log_bodies`) a page takes before it stops, ending with the entry that passes this: with
 * `log_bodies.max_bytes` at its 1 MiB most an entry carries up to 2 MiB of them, and a page of 500 was 1 GB in memory.
 */
export const MAX_PAGE_BODY_CHARS = 8 * 1_048_576;
/**
 * Body characters a page reads at most, in the records it takes and those its filters skip alike: reading a record
 * decodes its bodies whole, so a rare filter over 10,000 records with 256 KiB bodies held the event loop for 10 s.
 * A call with this many held the event loop up to about 70 ms in test/e2e/request-log-scan-budget (16 MiB: 130-150 ms
 * alone and 400-530 ms on a loaded CI machine; a request arriving meanwhile waited that long). The page ends with the record that passes it, with its cursor.
 */
export const MAX_SCANNED_BODY_CHARS = 4 * 1_048_576;

/** The logged body characters of an entry (what reading it decodes beyond its few fields). */
export function bodyChars(entry: Pick<RequestLogEntry, 'request_body' | 'response_body'>): number {
  return (entry.request_body?.length ?? 0) + (entry.response_body?.length ?? 0);
}
/** Sorts after every log id (ids are digits and a dash). */
const AFTER_ALL_IDS = '\uffff';

/** The error index's marker (it sorts after every log id): present once the index covers the whole log. */
export const ERROR_INDEX_COMPLETE = '\uffff';

/** The error index's value for a failed request: its status, a tab, its error message lower-cased. */
export function errorIndexValue(entry: Pick<RequestLogEntry, 'status' | 'error_message'>): string {
  return `${entry.status}\t${(entry.error_message ?? '').toLowerCase()}`;
}

/** The request log's databases: entries by id, ids by key, and failed requests' status and message by id. */
export interface RequestLogDbs {
  log: Database<RequestLogEntry, string>;
  byKey: Database<null, [string, string]>;
  errors: Database<string, string>;
}

/** Whether a filter can only match failed requests (status 400 and up), so the error index can be walked instead. */
function failuresOnly(filter: RequestLogFilter): boolean {
  return filter.q !== undefined || (filter.status !== undefined && filter.status >= 400) || (filter.status_class !== undefined && filter.status_class >= 4);
}

/** The smallest id written at or after `ms` (ids start with the zero-padded epoch ms). */
export function idAt(ms: number): string {
  return `${String(Math.max(0, Math.trunc(ms))).padStart(15, '0')}-`;
}

/**
 * Whether the entry's provider and upstream model are `name` (`openai/gpt-4o`): the name /api/usage gives a model
 * group, so a request that asked for a route (`chat`) is found by the model that answered it. Compared in place: no
 * string is built per entry scanned.
 */
function servedAs(entry: RequestLogEntry, name: string): boolean {
  const { provider, upstream_model: model } = entry;
  return (
    provider !== null &&
    model !== null &&
    name.length === provider.length + 1 + model.length &&
    name[provider.length] === '/' &&
    name.startsWith(provider) &&
    name.endsWith(model)
  );
}

/** Whether an entry passes the filters (`q` lower-cased, or null); the arrival range is the caller's key range. */
export function matchesLogFilter(entry: RequestLogEntry, filter: Omit<RequestLogFilter, 'from' | 'to'>, q: string | null): boolean {
  if (filter.team_id !== undefined && entry.team_id !== filter.team_id) return false;
  if (filter.key_id !== undefined && entry.key_id !== filter.key_id) return false;
  if (filter.model !== undefined && entry.model !== filter.model && entry.upstream_model !== filter.model && !servedAs(entry, filter.model)) return false;
  if (filter.provider !== undefined && entry.provider !== filter.provider) return false;
  if (filter.route !== undefined && entry.route !== filter.route) return false;
  if (filter.status !== undefined && entry.status !== filter.status) return false;
  if (filter.status_class !== undefined && Math.trunc(entry.status / 100) !== filter.status_class) return false;
  if (q !== null && !(entry.error_message ?? '').toLowerCase().includes(q)) return false;
  return true;
}

/**
 * One page of the request log, newest first. Ids sort by time, so a time range is a key range; a key filter
 * walks that key's index. Other filters are checked entry by entry, within MAX_SCANNED_PER_PAGE and
 * MAX_SCANNED_BODY_CHARS.
 */
export function queryRequestLog({ log, byKey, errors }: RequestLogDbs, query: RequestLogQuery): RequestLogPage {
  const limit = Math.min(Math.max(Math.trunc(query.limit ?? DEFAULT_LOG_LIMIT) || DEFAULT_LOG_LIMIT, 1), MAX_LOG_LIMIT);
  const q = query.q ? query.q.toLowerCase() : null;
  // The newest id the page may hold (exclusive) and the oldest (inclusive).
  let high = query.before ?? AFTER_ALL_IDS;
  if (query.to !== undefined && idAt(query.to) < high) high = idAt(query.to);
  const low = query.from !== undefined ? idAt(query.from) : '';
  const data: RequestLogEntry[] = [];
  let scanned = 0;
  let last: string | null = null;
  let kept = 0;
  let read = 0;
  const take = (id: string, entry: RequestLogEntry | undefined): boolean => {
    scanned++;
    last = id;
    const chars = entry ? bodyChars(entry) : 0;
    read += chars;
    if (entry && matchesLogFilter(entry, query, q)) {
      data.push(entry);
      kept += chars;
    }
    return data.length < limit && scanned < MAX_SCANNED_PER_PAGE && kept < MAX_PAGE_BODY_CHARS && read < MAX_SCANNED_BODY_CHARS;
  };
  let exhausted = true;
  if (query.key_id === undefined && failuresOnly(query)) {
    // Failed requests are a small part of the log: their index holds the status and message, so only the
    // candidates that match there are read whole.
    for (const { key, value } of errors.getRange({ start: high, ...(low ? { end: low } : {}), reverse: true })) {
      if (key === high) continue;
      const tab = value.indexOf('\t');
      const status = Number(value.slice(0, tab));
      const candidate =
        (query.status === undefined || status === query.status) &&
        (query.status_class === undefined || Math.trunc(status / 100) === query.status_class) &&
        (q === null || value.includes(q, tab + 1));
      if (!take(key, candidate ? log.get(key) : undefined)) {
        exhausted = false;
        break;
      }
    }
  } else if (query.key_id !== undefined) {
    for (const { key } of byKey.getRange({ start: [query.key_id, high], end: [query.key_id, low], reverse: true })) {
      if (key[1] === high) continue;
      if (!take(key[1], log.get(key[1]))) {
        exhausted = false;
        break;
      }
    }
  } else {
    for (const { key, value } of log.getRange({ start: high, ...(low ? { end: low } : {}), reverse: true })) {
      if (key === high) continue;
      if (!take(key, value)) {
        exhausted = false;
        break;
      }
    }
  }
  return { data, next_before: exhausted ? null : last };
}
