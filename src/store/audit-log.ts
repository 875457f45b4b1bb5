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

  /** Newest first; `before` pages on from an entry id. */
  list(limit: number, before?: string): AuditEntry[] {
    const out: AuditEntry[] = [];
    const range = this.db.getRange({ reverse: true, ...(before ? { start: before } : {}) });
    for (const { key, value } of range) {
      if (before && key === before) continue;
      out.push(value);
      if (out.length >= limit) break;
    }
    return out;
  }
}
