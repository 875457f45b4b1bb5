import type { Database, RootDatabase } from 'lmdb';
import type { ChatCompletion, NativeStreamEvent } from '../core/canonical.js';
import { commitSoon } from '../store/commit.js';
import { openRecords, recordCount } from '../store/records.js';

/** One cached answer, as LMDB keeps it. */
export interface CachedNative {
  format: string;
  body?: Record<string, unknown>;
  /** The whole message's text as the upstream wrote it (its numbers' own digits), when it came whole. */
  text?: string;
  events?: NativeStreamEvent[];
}

export interface CacheEntry {
  id: number;
  exactKey: string;
  /** The semantic tier's scope (see CacheKeys.semanticScope); '' when the request had no text question. */
  semanticScope: string;
  /** The last question's text, for the lexical check of a semantic match. */
  question: string | null;
  /** The conversation's embedding (Float32 bytes), when the semantic tier had one. */
  vector: Uint8Array | null;
  /** The embedder that made `vector`: vectors of different models are never compared. */
  embedder: string | null;
  /** The requested model or route name, and who asked (for DELETE by model, key or team). */
  model: string;
  /**
   * Where the request was sent: its route, else the `<provider>/<model>` it resolved to (the name its cache key is
   * scoped to). A routing rule may have sent it elsewhere than `model` names; absent in entries stored before.
   */
  target?: string;
  keyId: string | null;
  teamId: string | null;
  answer: ChatCompletion;
  /**
   * The upstream's own answer when it came through native pass-through (an Anthropic or Gemini client of a provider of
   * its format): the whole message, or the stream's events; or when it reached the client as the provider wrote it (an
   * OpenAI client of an OpenAI-format provider): the whole answer's text, or each chunk's event. A hit for a client of
   * that format replays it, so what the canonical answer cannot carry (grounding metadata, thinking signatures, fields
   * tollgate does not model, the numbers' own digits, the stream's own chunks) is not lost on a hit.
   */
  native?: CachedNative | null;
  provider: string;
  upstreamModel: string;
  /** What the answer cost when it was bought: each hit saves this much. */
  costUsd: number;
  createdAt: number;
  expiresAt: number;
  usedAt: number;
  hits: number;
}

/** Which entries a delete removes: every one, or those of a model, key or team. */
export interface CacheSelector {
  model?: string | undefined;
  keyId?: string | undefined;
  teamId?: string | undefined;
}

/**
 * A model selects the answers asked for by that name, those of requests sent to that route or model (a routing rule may
 * have sent a request elsewhere than the name it asked for), and those that model gave (`<provider>/<model>`), whatever
 * name they were asked for by: an operator removing a model's answers means those a route to it got too.
 */
export function selects(selector: CacheSelector, entry: Pick<CacheEntry, 'model' | 'target' | 'provider' | 'upstreamModel' | 'keyId' | 'teamId'>): boolean {
  return (
    (selector.model === undefined || entry.model === selector.model || entry.target === selector.model || `${entry.provider}/${entry.upstreamModel}` === selector.model) &&
    (selector.keyId === undefined || entry.keyId === selector.keyId) &&
    (selector.teamId === undefined || entry.teamId === selector.teamId)
  );
}

function firstKey(keys: Iterable<number>): number | undefined {
  for (const key of keys) return key;
  return undefined;
}

/**
 * The cache's LMDB databases: entries by id, the id of each exact key, and entry ids by expiry time (so the
 * sweep reads only what expired, however many entries there are).
 */
export class CacheStore {
  private readonly entries: Database<CacheEntry, number>;
  private readonly exact: Database<number, string>;
  private readonly expiry: Database<null, [number, number]>;
  /** Entry ids by last use: the least recently used come first, for eviction without reading every entry. */
  private readonly recency: Database<null, [number, number]>;
  /**
   * An entry's last use and hits since it was stored, by id, once it has been hit: a hit writes this small row and
   * its recency row, never the entry (a long answer's record is megabytes: reading and writing it again on every
   * hit cost 0.1 s at 16 MiB). An entry without a row has its own `usedAt` and `hits` (as stored, or as an earlier
   * version of tollgate wrote them on each hit).
   */
  private readonly uses: Database<[usedAt: number, hits: number], number>;
  private nextId: number;
  private lastTouch: Promise<unknown> = Promise.resolve();
  /**
   * Entries stored, kept by this store's own puts and removes (read from the database's statistics the first time
   * and at each `recount`): the count is checked after every stored answer, and the statistics call cost about
   * 17 µs of a cache miss.
   */
  private counted: number | null = null;

  constructor(private readonly root: RootDatabase) {
    this.entries = openRecords<CacheEntry, number>(root, { name: 'cache-entries' });
    this.exact = root.openDB<number, string>({ name: 'cache-exact' });
    this.expiry = root.openDB<null, [number, number]>({ name: 'cache-expiry' });
    this.recency = root.openDB<null, [number, number]>({ name: 'cache-recency' });
    this.uses = root.openDB<[number, number], number>({ name: 'cache-uses' });
    let last = 0;
    for (const id of this.entries.getKeys({ reverse: true, limit: 1 })) last = id;
    this.nextId = last + 1;
  }

  newId(): number {
    return this.nextId++;
  }

  get(id: number): CacheEntry | undefined {
    return this.entries.get(id);
  }

  byExactKey(key: string): CacheEntry | undefined {
    const id = this.exact.get(key);
    return id === undefined ? undefined : this.entries.get(id);
  }

  /** The id of the entry stored under an exact key, without reading the entry. */
  exactId(key: string): number | undefined {
    return this.exact.get(key);
  }

  /** Stores an entry; an older entry of the same exact key is replaced. Resolves with the replaced entry's id. */
  put(entry: CacheEntry): Promise<number | null> {
    return commitSoon(this.root, () => {
      let replaced: number | null = null;
      const previous = this.exact.get(entry.exactKey);
      if (previous !== undefined && previous !== entry.id) {
        replaced = previous;
        const damaged = new Set<number>();
        this.removeNow(previous, damaged);
        this.removeRowsOf(damaged);
      }
      void this.exact.put(entry.exactKey, entry.id);
      void this.entries.put(entry.id, entry);
      void this.expiry.put([entry.expiresAt, entry.id], null);
      void this.recency.put([entry.usedAt, entry.id], null);
      if (this.counted !== null) this.counted++;
      return replaced;
    });
  }

  /** Records a hit (for LRU eviction and the stats); written in the background. */
  touch(entry: CacheEntry, at: number): void {
    const id = entry.id;
    this.lastTouch = commitSoon(this.root, () => {
      // Deleted since the lookup read it: nothing to record. Only its key is looked up (see `uses`).
      if (!this.entries.doesExist(id)) return;
      const use = this.uses.get(id);
      void this.recency.remove([use ? use[0] : entry.usedAt, id]);
      void this.recency.put([at, id], null);
      void this.uses.put(id, [at, (use ? use[1] : entry.hits) + 1]);
    })
      // A hit that could not be recorded only leaves the entry's recency older: never an error for the request.
      .catch(() => undefined);
  }

  /** Resolves once the last recorded hit is committed (eviction reads recency after it). */
  async touchesSettled(): Promise<void> {
    await this.lastTouch;
  }

  /** The `limit` least recently used entry ids. */
  leastRecentlyUsed(limit: number): number[] {
    const ids: number[] = [];
    for (const key of this.recency.getKeys({ limit })) ids.push(key[1]);
    return ids;
  }

  async remove(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.entries.transaction(() => {
      const damaged = new Set<number>();
      for (const id of ids) this.removeNow(id, damaged);
      this.removeRowsOf(damaged);
    });
  }

  /**
   * Removes those of `ids` whose record still cannot be read (found by `all` or the index builder); resolves with how
   * many went. A record read fine now (a read that failed once) stays.
   */
  async removeUnreadable(ids: readonly number[]): Promise<number> {
    if (ids.length === 0) return 0;
    return this.entries.transaction(() => {
      const damaged = new Set<number>();
      for (const id of ids) {
        try {
          this.entries.get(id);
        } catch {
          this.removeNow(id, damaged);
        }
      }
      this.removeRowsOf(damaged);
      return damaged.size;
    });
  }

  /**
   * Inside a transaction: an entry and its index rows. A damaged record's id is added to `damaged`, whose rows the
   * caller removes at the end with one walk for them all (removeRowsOf).
   */
  private removeNow(id: number, damaged: Set<number>): void {
    let entry: CacheEntry | undefined;
    try {
      entry = this.entries.get(id);
    } catch {
      // A record that cannot be read (damaged) must still go, so a new answer under its exact key can take its place.
      // Its index rows cannot be found from it: the caller looks for them (removeRowsOf), since a recency row left
      // behind was chosen by every eviction again, which then removed nothing.
      void this.entries.remove(id);
      damaged.add(id);
      if (this.counted !== null) this.counted--;
      return;
    }
    if (!entry) return;
    if (this.exact.get(entry.exactKey) === id) void this.exact.remove(entry.exactKey);
    void this.expiry.remove([entry.expiresAt, id]);
    void this.recency.remove([this.uses.get(id)?.[0] ?? entry.usedAt, id]);
    void this.uses.remove(id);
    void this.entries.remove(id);
    if (this.counted !== null) this.counted--;
  }

  /**
   * Inside a transaction: the exact, expiry and recency rows of damaged entries, found without their records (a walk
   * over the keys: rare, and one for however many are removed together).
   */
  private removeRowsOf(ids: ReadonlySet<number>): void {
    if (ids.size === 0) return;
    for (const { key, value } of this.exact.getRange()) if (ids.has(value)) void this.exact.remove(key);
    for (const key of this.expiry.getKeys()) if (ids.has(key[1])) void this.expiry.remove(key);
    for (const key of this.recency.getKeys()) if (ids.has(key[1])) void this.recency.remove(key);
    for (const id of ids) void this.uses.remove(id);
  }

  /** Ids of entries whose expiry is at or before `now`, oldest first, at most `limit`. */
  expired(now: number, limit: number): number[] {
    const ids: number[] = [];
    for (const key of this.expiry.getKeys({ end: [now, Number.MAX_SAFE_INTEGER], limit })) ids.push(key[1]);
    return ids;
  }

  /** Every entry id, in order (keys only: no entry is decoded). */
  ids(): Iterable<number> {
    return this.entries.getKeys();
  }

  /**
   * Every entry, in id order (for rebuilding the index, sweeping and deleting). A record that cannot be read (damaged)
   * is stepped over and its id pushed to `unreadable`: one bad record must not stop a walk over all the others.
   */
  *all(unreadable: number[] = []): Generator<CacheEntry> {
    let start: number | undefined;
    for (;;) {
      try {
        for (const { key, value } of this.entries.getRange(start === undefined ? {} : { start })) {
          start = key + 1;
          yield value;
        }
        return;
      } catch (err) {
        // The range stopped on the record after the last one read: its id is the next key (keys decode apart from values).
        const bad = firstKey(this.entries.getKeys(start === undefined ? { limit: 1 } : { start, limit: 1 }));
        if (bad === undefined) throw err;
        unreadable.push(bad);
        start = bad + 1;
      }
    }
  }

  /** Bytes the cache's databases take in the store (their pages). */
  sizeBytes(): number {
    let bytes = 0;
    for (const db of [this.entries, this.exact, this.expiry, this.recency, this.uses] as Array<{ getStats(): unknown }>) {
      const stats = db.getStats() as { pageSize: number; treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number };
      bytes += stats.pageSize * (stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages);
    }
    return bytes;
  }

  /** Entries stored (see `counted`). */
  get count(): number {
    return (this.counted ??= this.statsCount());
  }

  /** Reads the count from the database again (a failed transaction would have left the kept count off by its entry). */
  recount(): void {
    this.counted = this.statsCount();
  }

  /** From the database's statistics (getCount() would walk every key: ~2 ms at 100,000). */
  private statsCount(): number {
    return recordCount(this.entries);
  }

  /** Removes every entry at once. */
  async clear(): Promise<void> {
    // In the same queue as the stores and hits, so everything queued before the clear is cleared and everything after
    // it stays. Not lmdb-js's clearAsync: it forgets the entries' record shapes at once but empties the database later
    // on its write thread, and an entry committed in between would be written with shapes the clear then erased (it
    // could not be read after a restart).
    await commitSoon(this.root, () => {
      this.entries.clearSync();
      this.exact.clearSync();
      this.expiry.clearSync();
      this.recency.clearSync();
      this.uses.clearSync();
      this.counted = 0;
    });
  }
}
