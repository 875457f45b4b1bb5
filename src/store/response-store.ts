import type { Database, RootDatabase } from 'lmdb';
import { commitSoon } from './commit.js';
import { openRecords, recordCount } from './records.js';

type Json = Record<string, unknown>;

/**
 * The longest id (in UTF-8 bytes) looked up or kept: far above OpenAI's and tollgate's own (about 50 characters), and
 * under LMDB's key limit (1978 bytes), which throws on a longer key. A client's longer id is one nobody kept.
 */
const MAX_ID_BYTES = 1024;

function keyable(id: string): boolean {
  return id.length <= MAX_ID_BYTES && Buffer.byteLength(id) <= MAX_ID_BYTES;
}

/**
 * A Responses API answer tollgate keeps for a later `previous_response_id`, GET /v1/responses/{id} and its input items.
 * `scope` is whose it is (`key:<virtual key id>`, or `anonymous` for calls without a key): nobody else sees it.
 */
export interface StoredResponse {
  scope: string;
  /** Epoch ms after which it is gone (read as not found, deleted by the sweep). */
  expires_at: number;
  /**
   * The Response as the client got it, for an answer tollgate rendered (a provider without the Responses API); null
   * for one a provider serving the Responses API kept itself (OpenAI): tollgate then keeps only whose it is and where.
   */
  response: Json | null;
  /** Every input item of the conversation up to this turn (earlier turns' input and output, then this turn's input). */
  input_items: Json[];
  /** The provider that keeps a native answer (`response` null), whose key reads and deletes it there. */
  provider?: string;
  /** The upstream model and the configured key (its id, never the key) that made a native answer. */
  upstream_model?: string;
  provider_key_id?: string | null;
}

/**
 * Stored Responses in the gateway's LMDB environment: `responses` (response id -> record), `responses-by-expiry`
 * ([expires_at, id] -> null, which the sweep walks oldest first) and `response-items` (output item id -> response id).
 * A write is read back at once (the next turn may name it before its background commit: `pending` holds it until
 * then) and commits with the other background writes. The bytes the records take are counted as they are written and
 * removed (see bytes), so the sweep can keep them within `settings.response_max_bytes`.
 */
export class ResponseStore {
  private readonly db: Database<StoredResponse, string>;
  private readonly byExpiry: Database<null, [number, string]>;
  /** The items of the Responses tollgate rendered: item id -> response id (an input's item_reference names one). */
  private readonly items: Database<string, string>;
  private readonly pending = new Map<string, StoredResponse | null>();
  private readonly pendingItems = new Map<string, string>();
  /** The bytes the committed records take (their encoded values), counted once at open then kept as they change. */
  private total = 0;
  private readonly written = new Set<() => void>();

  constructor(
    private readonly root: RootDatabase,
    private readonly now: () => number = Date.now,
  ) {
    this.db = openRecords<StoredResponse, string>(root, { name: 'responses' });
    this.byExpiry = root.openDB<null, [number, string]>({ name: 'responses-by-expiry' });
    this.items = root.openDB<string, string>({ name: 'response-items' });
    // Once at open (a walk over the keys, reading each value's length in place), before any request.
    for (const id of this.db.getKeys()) this.total += this.sizeOf(id);
  }

  /** The bytes the kept records take in the store (their values as encoded). */
  bytes(): number {
    return this.total;
  }

  /** Calls `listener` after each write commits (the sweeper checks the byte bound); returns how to stop. */
  onWritten(listener: () => void): () => void {
    this.written.add(listener);
    return () => this.written.delete(listener);
  }

  /** The encoded size of `id`'s committed record (0 when there is none), read in place without decoding it. */
  private sizeOf(id: string): number {
    return this.db.getBinaryFast(id)?.length ?? 0;
  }

  /**
   * The output item `itemId` of a Response that is `scope`'s and not expired, as it was kept; null when there is none.
   */
  findItem(itemId: string, scope: string): Record<string, unknown> | null {
    if (!keyable(itemId)) return null;
    const responseId = this.pendingItems.get(itemId) ?? this.items.get(itemId);
    const record = responseId === undefined ? null : this.get(responseId, scope);
    if (!record?.response) return null;
    const output = Array.isArray(record.response.output) ? (record.response.output as Json[]) : [];
    return output.find((item) => item.id === itemId) ?? null;
  }

  /** The time records expire by (the gateway's clock). */
  nowMs(): number {
    return this.now();
  }

  /** The record of `id` when it is `scope`'s and not expired; null otherwise (unknown, another's, expired, deleted). */
  get(id: string, scope: string): StoredResponse | null {
    const record = this.find(id);
    return record && record.scope === scope ? record : null;
  }

  /** The record of `id` whoever's it is, when not expired (to tell a foreign id from one tollgate never kept). */
  find(id: string): StoredResponse | null {
    if (!keyable(id)) return null;
    const record = this.pending.has(id) ? this.pending.get(id) : this.db.get(id);
    if (!record || record.expires_at <= this.now()) return null;
    return record;
  }

  /** Keeps a record; resolves once it is committed (it is read back before that). */
  async put(id: string, record: StoredResponse): Promise<void> {
    if (!keyable(id)) throw new RangeError('a response id longer than any kept');
    this.pending.set(id, record);
    const itemIds = outputIds(record).filter(keyable);
    for (const itemId of itemIds) this.pendingItems.set(itemId, id);
    try {
      await commitSoon(this.root, () => {
        const before = this.db.get(id);
        if (before) this.byExpiry.remove([before.expires_at, id]);
        const sizeBefore = this.sizeOf(id);
        this.db.put(id, record);
        this.total += this.sizeOf(id) - sizeBefore;
        this.byExpiry.put([record.expires_at, id], null);
        for (const itemId of itemIds) this.items.put(itemId, id);
      });
      for (const listener of this.written) listener();
    } finally {
      if (this.pending.get(id) === record) this.pending.delete(id);
      for (const itemId of itemIds) if (this.pendingItems.get(itemId) === id) this.pendingItems.delete(itemId);
    }
  }

  /** Removes a record and its items' index entries (inside a transaction). */
  private removeRecord(id: string, record: StoredResponse): void {
    this.total -= this.sizeOf(id);
    this.db.remove(id);
    this.byExpiry.remove([record.expires_at, id]);
    for (const itemId of outputIds(record).filter(keyable)) if (this.items.get(itemId) === id) this.items.remove(itemId);
  }

  /** Deletes `id` when it is `scope`'s (and not expired); false when there was no such response. */
  async delete(id: string, scope: string): Promise<boolean> {
    const record = this.get(id, scope);
    if (!record) return false;
    this.pending.set(id, null);
    try {
      await commitSoon(this.root, () => this.removeRecord(id, record));
    } finally {
      if (this.pending.get(id) === null) this.pending.delete(id);
    }
    return true;
  }

  /**
   * Deletes what expired, then the soonest to expire (the oldest, at one retention) beyond `maxEntries`, then beyond
   * `maxBytes`, in batches of `batch` with the event loop free between them (requests never wait for a sweep);
   * resolves with the number deleted.
   */
  async sweep(options: { maxEntries: number | null; maxBytes?: number | null; batch?: number; stopped?: () => boolean }): Promise<number> {
    const batch = Math.max(1, options.batch ?? 1_000);
    const stopped = options.stopped ?? (() => false);
    let deleted = await this.deleteSoonest(() => false, [this.now(), '\uffff'], batch, stopped);
    if (options.maxEntries !== null && !stopped()) {
      const excess = recordCount(this.db) - options.maxEntries;
      if (excess > 0) deleted += await this.deleteSoonest((done) => done >= excess, null, batch, stopped);
    }
    const maxBytes = options.maxBytes ?? null;
    if (maxBytes !== null && !stopped() && this.total > maxBytes) deleted += await this.deleteSoonest(() => this.total <= maxBytes, null, batch, stopped);
    return deleted;
  }

  /** Deletes the soonest to expire (up to `end`) until `enough` says so, at most `batch` a transaction. */
  private async deleteSoonest(enough: (deleted: number) => boolean, end: [number, string] | null, batch: number, stopped: () => boolean): Promise<number> {
    let deleted = 0;
    while (!enough(deleted) && !stopped()) {
      const doomed = [...this.byExpiry.getKeys({ ...(end === null ? {} : { end }), limit: batch })];
      if (doomed.length === 0) break;
      await this.root.transaction(() => {
        for (const key of doomed) {
          // Checked again here: the byte count falls with each record, and the next may not need to go.
          if (enough(deleted)) return;
          this.byExpiry.remove(key);
          const record = this.db.get(key[1]);
          if (record?.expires_at === key[0]) this.removeRecord(key[1], record);
          deleted += 1;
        }
      });
      if (doomed.length < batch) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return deleted;
  }
}

/** The ids of a rendered Response's output items (what a later input may name by item_reference). */
function outputIds(record: StoredResponse): string[] {
  const output = record.response && Array.isArray(record.response.output) ? (record.response.output as unknown[]) : [];
  return output.flatMap((item) => (typeof item === 'object' && item !== null && typeof (item as Json).id === 'string' ? [(item as Json).id as string] : []));
}
