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
 * The longest conversation resolved from its turns' links (turns, and bytes of their records): a walk reads and
 * decodes each turn on the event loop, so this bounds what one request can make it do. Far above a long agent loop
 * (hundreds of turns), and above what any model's context takes.
 */
export const CONVERSATION_LIMITS = { turns: 10_000, bytes: 128 * 1024 * 1024 };

/** A conversation's input items, or which of CONVERSATION_LIMITS it is past. */
export type Conversation = { items: Json[] } | { tooLong: 'turns' | 'bytes'; limit: number };

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
  /**
   * This turn's own input items when it continues `previous`; without `previous` (a first turn, or one kept before
   * turns were linked) every input item of the conversation up to this turn. See conversation() for the whole list.
   */
  input_items: Json[];
  /** The Response this turn continues (its previous_response_id, kept here): its conversation comes before this turn's. */
  previous?: string;
  /**
   * Deleted, expired or evicted, but kept while later turns continue it (their conversations hold its items): it
   * reads as not found, and goes once the last of them goes.
   */
  hidden?: true;
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
  /** How many kept turns continue a Response (response id -> count): one they continue is hidden, not removed. */
  private readonly links: Database<number, string>;
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
    private readonly limits: { turns: number; bytes: number } = CONVERSATION_LIMITS,
  ) {
    this.db = openRecords<StoredResponse, string>(root, { name: 'responses' });
    this.byExpiry = root.openDB<null, [number, string]>({ name: 'responses-by-expiry' });
    this.items = root.openDB<string, string>({ name: 'response-items' });
    this.links = root.openDB<number, string>({ name: 'response-links' });
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
   * `records`, one per request, keeps the records read for it: reading one decodes it whole, its input included, and
   * a turn naming the fifty parallel tool calls of a Response with a few MB of input read it fifty times (a second of
   * a held event loop).
   */
  findItem(itemId: string, scope: string, records?: Map<string, StoredResponse | null>): Record<string, unknown> | null {
    if (!keyable(itemId)) return null;
    const responseId = this.pendingItems.get(itemId) ?? this.items.get(itemId);
    if (responseId === undefined) return null;
    let record = records?.get(responseId);
    if (record === undefined) {
      record = this.get(responseId, scope);
      records?.set(responseId, record);
    }
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
    if (!record || record.hidden || record.expires_at <= this.now()) return null;
    return record;
  }

  /** A turn as kept, hidden or expired too (a later turn's conversation still holds it); null when gone. */
  private kept(id: string): StoredResponse | null {
    return this.pending.get(id) ?? this.db.get(id) ?? null;
  }

  /**
   * Every input item of `record`'s conversation up to its own input (what its input_items list), earlier turns' input
   * and output first: its turns are walked back by their links, within `limits` (CONVERSATION_LIMITS).
   */
  conversation(record: StoredResponse): Conversation {
    const parts: Json[][] = [record.input_items];
    let turns = 1;
    let bytes = 0;
    for (let turn = record; turn.previous !== undefined; ) {
      const previous = this.kept(turn.previous);
      if (!previous) break;
      if (++turns > this.limits.turns) return { tooLong: 'turns', limit: this.limits.turns };
      bytes += this.sizeOf(turn.previous);
      if (bytes > this.limits.bytes) return { tooLong: 'bytes', limit: this.limits.bytes };
      const output = previous.response && Array.isArray(previous.response.output) ? (previous.response.output as Json[]) : [];
      parts.push(output, previous.input_items);
      turn = previous;
    }
    return { items: parts.reverse().flat() };
  }

  /**
   * Keeps a record; resolves once it is committed (it is read back before that). A turn linked to the one it continues
   * (`previous`) also brings its whole conversation (`whole`, what conversation() gave for it with this turn's input):
   * should that turn have gone meanwhile (deleted or swept before this commit), the record keeps `whole` instead.
   */
  async put(id: string, record: StoredResponse, whole?: Json[]): Promise<void> {
    if (!keyable(id)) throw new RangeError('a response id longer than any kept');
    this.pending.set(id, record);
    const itemIds = outputIds(record).filter(keyable);
    for (const itemId of itemIds) this.pendingItems.set(itemId, id);
    try {
      await commitSoon(this.root, () => {
        let kept = record;
        if (record.previous !== undefined && !this.db.doesExist(record.previous)) {
          const { previous: _gone, ...alone } = record;
          kept = { ...alone, input_items: whole ?? record.input_items };
        }
        const before = this.db.get(id);
        if (before) this.byExpiry.remove([before.expires_at, id]);
        // Linked before the old link goes: the same turn kept again must not free the one it continues.
        if (kept.previous !== undefined) this.links.put(kept.previous, (this.links.get(kept.previous) ?? 0) + 1);
        if (before?.previous !== undefined) this.unlink(before.previous);
        this.write(id, kept);
        this.byExpiry.put([record.expires_at, id], null);
        for (const itemId of itemIds) this.items.put(itemId, id);
      });
      for (const listener of this.written) listener();
    } finally {
      if (this.pending.get(id) === record) this.pending.delete(id);
      for (const itemId of itemIds) if (this.pendingItems.get(itemId) === id) this.pendingItems.delete(itemId);
    }
  }

  /** Writes a record, counting its bytes (inside a transaction). */
  private write(id: string, record: StoredResponse): void {
    const before = this.sizeOf(id);
    this.db.put(id, record);
    this.total += this.sizeOf(id) - before;
  }

  /**
   * Takes a Response out of sight (deleted, expired, evicted; inside a transaction): removed, or hidden while later
   * turns continue it, so their conversations stay whole (see conversation).
   */
  private retire(id: string, record: StoredResponse): void {
    if ((this.links.get(id) ?? 0) === 0) {
      this.removeRecord(id, record);
      return;
    }
    this.byExpiry.remove([record.expires_at, id]);
    this.removeItems(id, record);
    if (!record.hidden) this.write(id, { ...record, hidden: true });
  }

  /** Removes a record and its items' index entries, then a hidden turn it continued nobody else does (inside a transaction). */
  private removeRecord(id: string, record: StoredResponse): void {
    this.drop(id, record);
    if (record.previous !== undefined) this.unlink(record.previous);
  }

  private drop(id: string, record: StoredResponse): void {
    this.total -= this.sizeOf(id);
    this.db.remove(id);
    this.byExpiry.remove([record.expires_at, id]);
    this.removeItems(id, record);
  }

  private removeItems(id: string, record: StoredResponse): void {
    for (const itemId of outputIds(record).filter(keyable)) if (this.items.get(itemId) === id) this.items.remove(itemId);
  }

  /** One turn fewer continues `id`; a hidden one nothing continues any more goes (and so on up its chain, in a loop). */
  private unlink(id: string): void {
    for (let next: string | undefined = id; next !== undefined; ) {
      const count = (this.links.get(next) ?? 0) - 1;
      if (count > 0) {
        this.links.put(next, count);
        return;
      }
      this.links.remove(next);
      const record = this.db.get(next);
      if (!record?.hidden) return;
      this.drop(next, record);
      next = record.previous;
    }
  }

  /** Deletes `id` when it is `scope`'s (and not expired); false when there was no such response. */
  async delete(id: string, scope: string): Promise<boolean> {
    const record = this.get(id, scope);
    if (!record) return false;
    this.pending.set(id, null);
    try {
      await commitSoon(this.root, () => this.retire(id, record));
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
          if (record?.expires_at === key[0]) this.retire(key[1], record);
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
