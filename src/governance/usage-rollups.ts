import type { Database, RootDatabase } from 'lmdb';
import { startOfLocalDay, startOfNextLocalDay } from '../core/time-zones.js';
import { openRecords } from '../store/records.js';

export const USAGE_DIMENSIONS = ['key', 'team', 'model', 'provider', 'route'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];
export const USAGE_INTERVALS = ['hour', 'day'] as const;
export type UsageInterval = (typeof USAGE_INTERVALS)[number];

const INTERVAL_MS: Record<UsageInterval, number> = { hour: 3_600_000, day: 86_400_000 };
/** Rollup rows read between two turns of the event loop (some milliseconds of decoding). */
const SCAN_CHUNK = 5_000;
/** The group value of requests without one (no key, no team, refused before routing). */
export const NO_GROUP = 'none';

/** What one group did in one interval. */
export interface UsageCounts {
  requests: number;
  /** Requests that ended in an error status (400 and above; a client that left, 499, is not an error). */
  errors: number;
  spend_usd: number;
  input_tokens: number;
  output_tokens: number;
}

export interface UsageRow extends UsageCounts {
  /** Start of the interval, ISO 8601: UTC, or local time with its offset when the query named a time zone. */
  start: string;
  group: string;
}

export interface UsageQuery {
  group_by: UsageDimension;
  interval: UsageInterval;
  /** Epoch ms, inclusive (rounded down to its interval). */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
}

/** One request's contribution, as the rollup writer hands it over. */
export interface UsageSample extends UsageCounts {
  at: number;
  groups: Record<UsageDimension, string>;
}

type RollupKey = [UsageDimension, UsageInterval, number, string];

export function bucketStart(at: number, interval: UsageInterval): number {
  const size = INTERVAL_MS[interval];
  return Math.floor(at / size) * size;
}

export function emptyCounts(): UsageCounts {
  return { requests: 0, errors: 0, spend_usd: 0, input_tokens: 0, output_tokens: 0 };
}

/**
 * Spend as the API shows it: sums of costs in binary floating point carry noise (three $0.10 requests add up to
 * 0.30000000000000004), so every sum is rounded to 1e-10 USD, far below any price.
 */
export function roundSpend(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

export function addCounts(into: UsageCounts, add: UsageCounts): void {
  into.requests += add.requests;
  into.errors += add.errors;
  into.spend_usd += add.spend_usd;
  into.input_tokens += add.input_tokens;
  into.output_tokens += add.output_tokens;
}

/**
 * Usage per group (key, team, model, provider, route) per hour and per day, kept up to date as requests finish,
 * so `GET /api/usage` reads a few rows per group and interval instead of scanning the request log. Rows are keyed
 * `[dimension, interval, bucket start, group]`: a query is one range read. The log's retention does not touch them.
 */
/** The key of the number of the last batch of deltas written (see `UsageRollups.add`). */
const LAST_BATCH = 'last-batch';

export class UsageRollups {
  private readonly db: Database<UsageCounts, RollupKey>;
  /** The number of the last batch written, in the transaction that wrote it: which batches a read snapshot holds. */
  private readonly batches: Database<number, string>;

  constructor(private readonly root: RootDatabase) {
    this.db = openRecords<UsageCounts, RollupKey>(root, { name: 'usage-rollups' });
    this.batches = root.openDB<number, string>({ name: 'usage-rollups-batches' });
  }

  /** The number of the last batch written (0 before the first). */
  lastBatch(): number {
    return this.batches.get(LAST_BATCH) ?? 0;
  }

  /** Adds pending deltas (by rollup key) in one transaction, noting there that batch number `batch` is written. */
  async add(deltas: ReadonlyMap<string, { key: RollupKey; counts: UsageCounts }>, batch?: number): Promise<void> {
    if (deltas.size === 0) return;
    await this.db.transaction(() => {
      for (const { key, counts } of deltas.values()) {
        const current = this.db.get(key) ?? emptyCounts();
        addCounts(current, counts);
        current.spend_usd = roundSpend(current.spend_usd);
        this.db.put(key, current);
      }
      if (batch !== undefined) this.batches.put(LAST_BATCH, batch);
    });
  }

  /**
   * Visits the rows of the range, oldest first, then by group, in chunks with the event loop let in between (a range
   * of 20,000 keys over 30 days is 600,000 rows, some seconds of decoding). One iterator over one read snapshot, so
   * a write committed meanwhile is not half seen. `snapshotHolds` is called first with the number of the last batch
   * that snapshot holds, so the caller adds only the deltas it does not.
   */
  async scan(query: UsageQuery, visit: (start: number, group: string, counts: UsageCounts) => void, snapshotHolds?: (batch: number) => void): Promise<void> {
    const from = bucketStart(query.from, query.interval);
    const txn = this.root.useReadTransaction();
    try {
      snapshotHolds?.(this.batches.get(LAST_BATCH, { transaction: txn }) ?? 0);
      let inChunk = 0;
      for (const { key, value } of this.db.getRange({ start: [query.group_by, query.interval, from], end: [query.group_by, query.interval, query.to], transaction: txn })) {
        visit(key[2], key[3], value);
        if (++inChunk < SCAN_CHUNK) continue;
        inChunk = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    } finally {
      txn.done();
    }
  }

  /** Rows of the range, oldest first, then by group, and the number of the last batch they hold (one read snapshot). */
  query(query: UsageQuery): { rows: UsageRow[]; batch: number } {
    const from = bucketStart(query.from, query.interval);
    const rows: UsageRow[] = [];
    const txn = this.root.useReadTransaction();
    try {
      const batch = this.batches.get(LAST_BATCH, { transaction: txn }) ?? 0;
      for (const { key, value } of this.db.getRange({ start: [query.group_by, query.interval, from], end: [query.group_by, query.interval, query.to], transaction: txn })) {
        rows.push({ start: new Date(key[2]).toISOString(), group: key[3], ...value });
      }
      return { rows, batch };
    } finally {
      txn.done();
    }
  }
}

/** The rollup keys one request adds to: every dimension, every interval. */
export function rollupKeys(sample: UsageSample): RollupKey[] {
  const keys: RollupKey[] = [];
  for (const interval of USAGE_INTERVALS) {
    const start = bucketStart(sample.at, interval);
    for (const dimension of USAGE_DIMENSIONS) keys.push([dimension, interval, start, sample.groups[dimension]]);
  }
  return keys;
}

/**
 * The local days of a zone that a range touches, as their bounds: the start of the day `from` falls on, then each
 * next day's start while it is before `to`, then the end of the last day (a day can be 23 or 25 hours long).
 */
export function localDayBounds(from: number, to: number, zone: string): number[] {
  const bounds = [startOfLocalDay(from, zone)];
  for (;;) {
    const next = startOfNextLocalDay(bounds[bounds.length - 1] as number, zone);
    bounds.push(next);
    if (next >= to) return bounds;
  }
}
