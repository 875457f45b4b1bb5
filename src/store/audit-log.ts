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
    const out: AuditEntry[] = [];
    const until = filter.to === undefined ? undefined : idAt(filter.to);
    const since = filter.from === undefined ? undefined : idAt(filter.from);
    const start = before !== undefined && (until === undefined || before < until) ? before : until;
    const range = this.db.getRange({ reverse: true, ...(start ? { start } : {}) });
    for (const { key, value } of range) {
      if (key === before || (until !== undefined && key >= until)) continue;
      if (since !== undefined && key < since) break;
      if (filter.action !== undefined && value.action !== filter.action) continue;
      if (filter.target !== undefined && value.target !== filter.target && !value.target.startsWith(`${filter.target}.`)) continue;
      out.push(value);
      if (out.length >= limit) break;
    }
    return out;
  }
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
