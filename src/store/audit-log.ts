import type { Database, RootDatabase } from 'lmdb';
import type { AuditEntry } from '../config/views.js';
import { openRecords } from './records.js';

/**
 * Append-only audit log of configuration changes. Ids sort by time (zero-padded epoch ms plus a sequence),
 * so the newest entries are a reverse range scan away.
 */
export class AuditLog {
  private readonly db: Database<AuditEntry, string>;
  private sequence = 0;

  constructor(root: RootDatabase) {
    this.db = openRecords<AuditEntry, string>(root, { name: 'audit' });
  }

  async append(entry: Omit<AuditEntry, 'id' | 'at'>): Promise<AuditEntry> {
    const now = Date.now();
    this.sequence = (this.sequence + 1) % 1_000_000;
    const id = `${String(now).padStart(15, '0')}-${String(this.sequence).padStart(6, '0')}`;
    const stored: AuditEntry = { id, at: new Date(now).toISOString(), ...entry };
    await this.db.put(id, stored);
    return stored;
  }

  /**
   * Newest first; `before` pages on from an entry id. The filter keeps entries made in [from, to) (epoch ms: the
   * ids sort by time, so the scan starts at `to` and stops at `from`), of one action, and whose target is `target`
   * or lies under it (`routes` matches `routes.chat`).
   */
  list(limit: number, before?: string, filter: AuditFilter = {}): AuditEntry[] {
    return this.page(limit, before, filter, Infinity).data;
  }

  /**
   * One page of `list`, reading at most `maxScanned` entries: a filter few entries match (a config change among a
   * long history of key edits) answers a short, even empty, page with the cursor where it stopped instead of reading
   * the whole log while requests wait. `next_before` is null once nothing older can match.
   */
  page(limit: number, before?: string, filter: AuditFilter = {}, maxScanned = MAX_AUDIT_SCANNED): AuditPage {
    const data: AuditEntry[] = [];
    const until = filter.to === undefined ? undefined : idAt(filter.to);
    const since = filter.from === undefined ? undefined : idAt(filter.from);
    const start = before !== undefined && (until === undefined || before < until) ? before : until;
    const range = this.db.getRange({ reverse: true, ...(start ? { start } : {}) });
    let scanned = 0;
    for (const { key, value } of range) {
      if (key === before || (until !== undefined && key >= until)) continue;
      if (since !== undefined && key < since) break;
      const matches =
        (filter.action === undefined || value.action === filter.action) &&
        (filter.target === undefined || value.target === filter.target || value.target.startsWith(`${filter.target}.`));
      if (matches) data.push(value);
      if (data.length >= limit || ++scanned >= maxScanned) return { data, next_before: key };
    }
    return { data, next_before: null };
  }
}

/** Entries one page of the audit log reads at most (as the request log's MAX_SCANNED_PER_PAGE). */
export const MAX_AUDIT_SCANNED = 10_000;

/** A page of the audit log and the cursor of the next (older) one, null on the last. */
export interface AuditPage {
  data: AuditEntry[];
  next_before: string | null;
}

/** What `GET /api/audit` and its export may narrow the log to. */
export interface AuditFilter {
  from?: number;
  to?: number;
  action?: string;
  target?: string;
}

/** The smallest id an entry made at `ms` can have. */
function idAt(ms: number): string {
  return `${String(Math.max(0, Math.trunc(ms))).padStart(15, '0')}-000000`;
}
