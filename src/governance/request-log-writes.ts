import type { Database, RootDatabase } from 'lmdb';
import { gatewayError } from '../core/errors.js';
import { bodyChars, matchesLogFilter, MAX_PAGE_BODY_CHARS, MAX_SCANNED_BODY_CHARS, MAX_SCANNED_PER_PAGE, type RequestLogFilter } from './request-log-query.js';
import type { RequestLogEntry } from './types.js';

/**
 * The request log in the order it was written. A log id sorts by when its request ARRIVED, but the entry is written
 * when the request ENDS, so a shipper polling `from=<its last poll>` never saw a request that arrived before a poll
 * and ended after it (a long stream, a slow retry chain). Each entry gets the next `write_seq` in the transaction that
 * writes it (transactions commit one after another, so a reader never sees a number before the smaller ones), and
 * this database maps write_seq -> log id; a shipper resumes with `written_after=<the last write_seq it took>`.
 *
 * Numbers only grow, with gaps (a restart jumps ahead). Key 0 holds the highest write_seq retention ever deleted:
 * a cursor below it has missed at least that record (retention deletes by arrival, not in write order), which is
 * said (410) instead of skipped; and the numbering goes on above it after a restart even when retention emptied the
 * log (and the clock went back).
 */
const TRIMMED_THROUGH = 0;

/** Names the filters of a written_after query: the arrival range does not apply (write order is its own order). */
export type WrittenAfterFilter = Omit<RequestLogFilter, 'from' | 'to'>;

export interface WrittenAfterQuery extends WrittenAfterFilter {
  /** The cursor: entries with a larger write_seq. */
  after: number;
  limit: number;
  /** Take what is still kept after a cursor retention has overtaken, instead of a 410. */
  allowGaps?: boolean;
}

export interface WrittenAfterPage {
  /** Oldest write first. */
  data: RequestLogEntry[];
  /** The cursor to ask with next: the last write_seq this page looked at (also past entries the filters skipped). */
  next_written_after: number;
  /** More entries were written after this page (ask again at once). */
  has_more: boolean;
}

export class RequestLogWrites {
  private readonly db: Database<string | number, number>;
  /** The last write_seq given out (committed or about to be). */
  private last: number;

  constructor(root: RootDatabase, startedAt: number = Date.now()) {
    this.db = root.openDB<string | number, number>({ name: 'request-log-writes' });
    // Each start numbers on from its start time (a thousand numbers a millisecond), not from the last number
    // stored: a data directory wiped (an emptyDir) or restored from a backup would otherwise hand out again numbers
    // a shipper already took, and its cursor would skip the new records in silence. Numbers stay below 2^53.
    this.last = Math.max(this.lastCommitted(), Math.trunc(startedAt) * 1_000);
  }

  /** The next write_seq: call inside the transaction that writes the entry, and put it there with `written`. */
  next(): number {
    return ++this.last;
  }

  /** Notes (inside the write transaction) that the entry `id` was written as `seq`. */
  written(seq: number, id: string): void {
    void this.db.put(seq, id);
  }

  /** Forgets (inside retention's transaction) the write_seqs of deleted entries, keeping the highest one deleted. */
  trimmed(seqs: readonly number[]): void {
    if (seqs.length === 0) return;
    let top = this.trimmedThrough();
    for (const seq of seqs) {
      void this.db.remove(seq);
      if (seq > top) top = seq;
    }
    void this.db.put(TRIMMED_THROUGH, top);
  }

  private trimmedThrough(): number {
    const value = this.db.get(TRIMMED_THROUGH);
    return typeof value === 'number' ? value : 0;
  }

  private lastCommitted(): number {
    let top = this.trimmedThrough();
    for (const key of this.db.getKeys({ reverse: true, limit: 1 })) if (typeof key === 'number' && key > top) top = key;
    return top;
  }

  /**
   * Entries written after `query.after`, oldest write first, at most `limit` of them, at most MAX_SCANNED_PER_PAGE
   * looked at (a rare filter answers a short page with `has_more`), about MAX_PAGE_BODY_CHARS of bodies taken and
   * MAX_SCANNED_BODY_CHARS read. Read synchronously, so the
   * page and the retention check see one committed state. A cursor past the last write_seq (a cursor from another
   * gateway) is a 400; one retention has overtaken is a 410 unless `allowGaps`.
   */
  page(log: Database<RequestLogEntry, string>, query: WrittenAfterQuery): WrittenAfterPage {
    const trimmed = this.trimmedThrough();
    if (query.after > this.last) {
      throw gatewayError('invalid_query', `written_after ${query.after} is past every write_seq this log has given (${this.last}): is it a cursor of another gateway?`, { param: 'written_after' });
    }
    if (query.after < trimmed && query.allowGaps !== true) {
      throw gatewayError(
        'log_cursor_trimmed',
        `Retention (settings.log_retention_days, log_max_entries) deleted records written after written_after=${query.after} before they were read (up to write_seq ${trimmed}). Ask again with allow_gaps=true to take the records still kept after it.`,
        { param: 'written_after' },
      );
    }
    const q = query.q ? query.q.toLowerCase() : null;
    const data: RequestLogEntry[] = [];
    let last = query.after;
    let scanned = 0;
    let more = false;
    let kept = 0;
    let read = 0;
    for (const { key, value } of this.db.getRange({ start: query.after + 1 })) {
      if (data.length >= query.limit || scanned >= MAX_SCANNED_PER_PAGE || kept >= MAX_PAGE_BODY_CHARS || read >= MAX_SCANNED_BODY_CHARS) {
        more = true;
        break;
      }
      scanned++;
      last = key;
      const entry = typeof value === 'string' ? log.get(value) : undefined;
      const chars = entry ? bodyChars(entry) : 0;
      read += chars;
      // An id written again later (a reused request id) is taken at its last write only.
      if (entry && entry.write_seq === key && matchesLogFilter(entry, query, q)) {
        data.push(entry);
        kept += chars;
      }
    }
    // A page that read to the end has seen every record kept after the cursor: the numbers retention deleted up to
    // `trimmed` are passed too, or a cursor left below them (a gap taken with allow_gaps over a log retention emptied)
    // was refused with a 410 again at every poll until a new record came. Every number below `trimmed` was committed
    // before it (numbers are given in commit order), so none can still appear.
    return { data, next_written_after: more ? last : Math.max(last, trimmed), has_more: more };
  }
}
