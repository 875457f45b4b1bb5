/**
 * The shapes `/api` takes and answers, named for the admin client. Types only: they come from the modules that
 * define them, so the client and the server cannot drift apart, and importing them loads no gateway code.
 */
import type { z } from 'zod';
import type { ConfigWarning } from '../core/config.js';
import type { TeamRecord } from '../core/identity.js';
import type { ConfigInput, providerKeySchema, providerSchema, routeSchema } from '../config/schema.js';
import type { keyCreateSchema, keyPatchSchema, teamCreateSchema, teamPatchSchema } from '../governance/governance-schemas.js';
import type { RequestLogFilter } from '../governance/request-log-query.js';
import type { RequestLogEntry, VirtualKeyView } from '../governance/types.js';
import type { UsageCounts, UsageDimension, UsageInterval, UsageRow } from '../governance/usage-rollups.js';
import type { AuditEntry } from '../config/views.js';

export type { ConfigWarning, RequestLogEntry, RequestLogFilter, TeamRecord, UsageCounts, UsageDimension, UsageInterval, UsageRow, VirtualKeyView };
export type { EffectiveConfigView } from '../config/config-service.js';
export type { ProviderKeyView, ProviderView, RouteView, AuditEntry } from '../config/views.js';

/** A list answer: `{ object: 'list', data }`. */
export interface ListOf<T> {
  object: 'list';
  data: T[];
}

/** `POST /api/keys` and `PATCH /api/keys/:id` bodies (unknown fields are refused with a 400). */
export type KeyCreate = z.input<typeof keyCreateSchema>;
export type KeyUpdate = z.input<typeof keyPatchSchema>;
/**
 * `GET /api/keys` query: without `limit`, every key; with it, one page (up to 1,000) continuing `after` a key id; with
 * `ids`, just those keys (up to 500; not with `limit`, `after` or `q`). `fields` keeps only those fields (and `id`).
 */
export interface KeyListQuery {
  limit?: number;
  /** The previous page's `next_after`. */
  after?: string;
  /** Text in the name, id or key prefix (case-insensitive). */
  q?: string;
  /** The keys to answer, in this order (an id that names no key is left out). */
  ids?: readonly string[];
  /** The fields each key keeps (`id` always): `['name', 'team']`. */
  fields?: ReadonlyArray<keyof VirtualKeyView>;
}

/** A list of keys; `has_more` and `next_after` (null on the last page) come with a `limit`. */
export interface KeyPage extends ListOf<VirtualKeyView> {
  has_more?: boolean;
  next_after?: string | null;
}

/** A key as created or rotated: the record plus the secret, shown this once. */
export type KeyWithSecret = VirtualKeyView & { key: string };

export type TeamCreate = z.input<typeof teamCreateSchema>;
export type TeamUpdate = z.input<typeof teamPatchSchema>;

/** `PUT /api/providers/:name` and `POST /api/providers/:name/keys` bodies. */
export type ProviderInput = z.input<typeof providerSchema>;
export type ProviderKeyInput = z.input<typeof providerKeySchema>;
export interface ProviderKeyUpdate {
  value?: string;
  weight?: number;
  models?: string[] | null;
  disabled?: boolean;
}
/** `PUT /api/routes/:name` body. */
export type RouteInput = z.input<typeof routeSchema>;
/** A whole config document (`PUT /api/config`), the same shape as the config file. */
export type ConfigDocumentInput = ConfigInput;

/** `GET /api/logs` query: the filters, a page size and the cursor of the previous page. Times: epoch ms or ISO 8601. */
export interface LogQuery extends Omit<RequestLogFilter, 'from' | 'to' | 'status' | 'status_class'> {
  from?: number | string;
  to?: number | string;
  /** A status (429) or a class ('4xx'). */
  status?: number | string;
  limit?: number;
  before?: string;
}

export interface LogPage {
  object: 'list';
  data: RequestLogEntry[];
  /** Pass as `before` for the next (older) page; null on the last. */
  next_before: string | null;
}

/**
 * `GET /api/logs?written_after=` query (what a log shipper polls): the records written after a `write_seq`, oldest
 * write first, with the filters but the arrival range and its cursor.
 */
export interface WrittenLogQuery extends Omit<LogQuery, 'from' | 'to' | 'before'> {
  /** The `next_written_after` of the previous call (0 for the start of the log). */
  written_after: number;
  /** Take what is still kept when retention deleted records after the cursor before they were read (else 410 log_cursor_trimmed). */
  allow_gaps?: boolean;
}

export interface WrittenLogPage {
  object: 'list';
  data: RequestLogEntry[];
  next_before: null;
  /** Pass as `written_after` next time (also past records the filters skipped). */
  next_written_after: number;
  /** More records were written after this page: ask again at once. */
  has_more: boolean;
}

/** `GET /api/audit` query: a page size (up to 500), the previous page's `next_before`, and the filters. */
export interface AuditQuery {
  limit?: number;
  before?: string;
  /** Epoch ms or ISO 8601 (a time without a zone is UTC). */
  from?: number | string;
  to?: number | string;
  /** `route.created`, `key.rotated`, `config.patched`, ... */
  action?: string;
  /** `routes.chat`, or `routes` for every `routes.*` entry. */
  target?: string;
}

export interface AuditPage {
  object: 'list';
  data: AuditEntry[];
  /** Pass as `before` for the next (older) page; null on the last. */
  next_before: string | null;
}

/** `GET /api/usage` query (defaults: group_by model, interval day, the last 30 days). */
export interface UsageQueryInput {
  group_by?: UsageDimension;
  interval?: UsageInterval;
  from?: number | string;
  to?: number | string;
  /** An IANA time zone: days are its local days, and times without an offset are read in it (default UTC). */
  tz?: string;
  /** Groups the answer holds at most, the top ones by spend (default and most: 1,000; fewer when their rows pass 50,000); the rest are summed in `others`. */
  limit?: number;
  /** `spend` (default): the top groups by spend. `group`: every group in name order, `limit` a page; follow `next_after` with `after`. */
  order?: 'spend' | 'group';
  /** With `order: 'group'`: the previous page's `next_after`. */
  after?: string;
}

export interface UsageReport {
  object: 'usage';
  group_by: UsageDimension;
  interval: UsageInterval;
  /** The zone the days are counted in (`UTC` when the query named none). */
  tz: string;
  from: string;
  to: string;
  data: UsageRow[];
  totals: Array<UsageCounts & { group: string }>;
  /** Groups with usage in the range, kept or not. */
  groups: number;
  /** More groups than fit (`limit`, and 50,000 rows): `data` and `totals` hold the top ones by spend, `others` the rest summed. */
  truncated: boolean;
  others?: { groups: number; totals: UsageCounts; data: Array<UsageCounts & { start: string }> };
  /** With `order: 'group'`: pass as `after` for the next page; null on the last. */
  next_after?: string | null;
}

/** `POST /api/config/validate`: what a PUT of the same body would say, applying nothing. */
export interface ConfigValidation {
  valid: true;
  warnings: ConfigWarning[];
}
