import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RootDatabase } from 'lmdb';
import type { CachePolicy, CacheSettings } from '../core/config.js';
import type { Log } from '../log.js';
import { CacheStore, selects, type CacheEntry, type CacheSelector } from './cache-store.js';
import { EmbedderBusy, EmbedderUnavailable, type Embedder } from './embedding/embedder.js';
import { createUseLiteEmbedder, USE_LITE_DIMENSIONS, USE_LITE_ID } from './embedding/use-lite.js';
import { chooseEmbedder, type EmbedderChoice } from './embedding/choose.js';
import type { EmbedThroughGateway } from './embedding/provider.js';
import { buildIndexInWorker } from './index-builder.js';
import { textsLexicallyCompatible } from './lexical-guard.js';
import type { CacheKeys } from './request-key.js';
import { VectorIndex } from './vector-index.js';
import { InFlight } from './in-flight.js';
import { withFields } from '../core/with-fields.js';

/** Most stored answers between two readings of the store's size against max_bytes (see CacheService.overCap). */
const MAX_STORES_BETWEEN_BYTE_CHECKS = 256;
/** Expired entries removed per sweep step (the rest go in the next step). */
const SWEEP_BATCH = 5_000;
/** Candidates the index returns per lookup: the best few, each then checked for scope, expiry and words. */
const CANDIDATES = 8;
/**
 * The most candidates a lookup reads when the closest ones are all above the threshold but not its own (the same
 * question asked by other teams or under other system prompts, expired answers not yet swept): the search widens
 * eightfold up to this, so an answer of the request's own scope is not hidden behind closer ones it may not use.
 */
const MAX_CANDIDATES = 512;
/** Longest a lookup waits for its embedding before answering without the semantic tier (never delay a request much). */
const EMBED_BUDGET_MS = 300;
/**
 * How long an embedder whose model failed to load (or whose worker died) is left alone before it is loaded again, in
 * the background. Meanwhile lookups skip the semantic tier at once: each one started another load of a model that
 * could not load, and waited up to EMBED_BUDGET_MS for it to fail.
 */
const EMBEDDER_RETRY_MS = 60_000;
/** How often expired entries are swept and the index saved when it changed. */
const MAINTENANCE_MS = 30_000;
/** Entries read between two yields to the event loop when a delete selects by model, key or team. */
const DELETE_SLICE = 2_000;
/** Shadow-mode would-be hits kept for GET /api/cache. */
const SHADOW_KEPT = 100;
/** How long a delete is remembered, and how many, for the answers on their way while it ran (see `purges`). */
const PURGES_KEPT_MS = 3_600_000;
const PURGES_KEPT = 1_000;
/** Damaged records remembered as reported (see readEntry); past this many the memory starts afresh. */
const REPORTED_KEPT = 10_000;
/**
 * Longest a request waits for an identical one's answer (see `flights`) before calling the provider itself: a silent
 * client connection meanwhile, so kept under common proxy idle timeouts (60 s), like the default `first_byte_ms`.
 */
const COALESCE_WAIT_MS = 30_000;

/** An answer as the cache stage hands it to be stored (and to the requests that waited for it). */
export type NewCacheEntry = Omit<CacheEntry, 'id' | 'vector' | 'embedder' | 'hits' | 'usedAt'>;

export type CacheTier = 'exact' | 'semantic';

export interface CacheHit {
  tier: CacheTier;
  entry: CacheEntry;
  /** Cosine similarity of a semantic hit (1 for an exact one). */
  similarity: number;
}

export interface CacheLookup {
  hit: CacheHit | null;
  /** The conversation's embedding, kept to store the answer under it after a miss; null when none was made. */
  vector: Float32Array | null;
  /** Why the semantic tier was not consulted, when it was not (busy, not ready, no text, off). */
  semanticSkipped: string | null;
}

export interface ShadowHit {
  at: string;
  requestId: string;
  tier: CacheTier;
  similarity: number;
  model: string;
  /** The question asked, and the stored question that would have answered it (cut to 200 characters). */
  question: string | null;
  matched: string | null;
}

/** Counters since start (GET /api/cache). */
interface Stats {
  lookups: number;
  exactHits: number;
  semanticHits: number;
  misses: number;
  semanticSkipped: number;
  stored: number;
  /** Streamed answers let go by unkept as they grew past the bound (see CacheService.noteTooLarge). */
  tooLarge: number;
  savedUsd: number;
  shadowHits: number;
  /** Exact hits served from an identical request's answer while it was fetched (counted in exactHits too). */
  coalesced: number;
}

/**
 * The response cache: entries in LMDB (exact tier by hash), and for the semantic tier an HNSW index over the
 * conversations' embeddings, saved beside the store and loaded at start (or rebuilt from the stored vectors in
 * the background when the file is missing or bad; the exact tier serves meanwhile). The embedder's worker starts
 * on the first semantic lookup, so a gateway with the cache off pays nothing.
 */
export class CacheService {
  private readonly store: CacheStore;
  private index: VectorIndex | null = null;
  private indexState: 'idle' | 'loading' | 'ready' | 'failed' = 'idle';
  private indexDirty = false;
  /**
   * Entries stored while no index was loaded (before it, or while it loads or is rebuilt). Ids continue from the
   * highest stored, so after a kill -9 one of them may be the id of an entry deleted since the index file was last
   * saved; the file then holds that deleted entry's vector under the id, which reconcile must replace.
   */
  private storedWithoutIndex = new Set<number>();
  private embedder: Embedder | null = null;
  private embedderState: 'idle' | 'loading' | 'ready' | 'failed' = 'idle';
  /** When the embedder last failed (see EMBEDDER_RETRY_MS). */
  private embedderFailedAt = 0;
  private timer: NodeJS.Timeout | null = null;
  private maxEntries = Number.POSITIVE_INFINITY;
  /** The byte cap (see CacheSettings.maxBytes). */
  private maxBytes: number | null = null;
  /** Answers to store before the store's size is read again (see overCap). */
  private storesUntilByteCheck = 0;
  private evicting = false;
  private compacting = false;
  /**
   * Recent deletes, oldest first: an answer asked for before one that selects it is not stored when it arrives after
   * it (a model's bad answers purged while more of them were on their way came back as soon as they ended).
   */
  private purges: Array<{ at: number; selector: CacheSelector }> = [];
  private readonly stats: Stats = { lookups: 0, exactHits: 0, semanticHits: 0, misses: 0, semanticSkipped: 0, stored: 0, tooLarge: 0, savedUsd: 0, shadowHits: 0, coalesced: 0 };
  /**
   * The answers being fetched from a provider now, by exact key: an identical request that misses meanwhile waits for
   * one (bounded) rather than pay for it again. Here rather than in the stage, so a config change does not split them.
   */
  readonly flights = new InFlight<NewCacheEntry>(COALESCE_WAIT_MS);
  private readonly shadow: ShadowHit[] = [];
  /**
   * Records a lookup could not read, already logged: such a record is met by every lookup that finds it until an
   * answer replaces it or maintenance removes it, and a popular question logged the same warning many times a second.
   */
  private readonly reportedUnreadable = new Set<number | string>();

  /** The embedder every vector of this cache comes from (made on first use: its model loads in a worker). */
  private embedderId: string;
  /** Its vectors' length; 0 until a provider's embedder answered once. */
  private dimensions: number;
  /** The config's name of the embedder in use. */
  private spec = 'use-lite';
  private readonly indexDir: string;
  private indexPath: string;
  /** How an embeddings model behind the gateway is called (for `<provider>/<model>` embedders); set by the gateway. */
  private viaGateway: EmbedThroughGateway | null = null;

  constructor(
    root: RootDatabase,
    private readonly lmdbPath: string,
    dataDir: string,
    private readonly log: Log,
    private createEmbedder: () => Embedder = () => createUseLiteEmbedder(),
    describe: { id: string; dimensions: number } = { id: USE_LITE_ID, dimensions: USE_LITE_DIMENSIONS },
  ) {
    this.store = new CacheStore(root);
    this.embedderId = describe.id;
    this.dimensions = describe.dimensions;
    this.indexDir = resolve(dataDir, 'cache');
    this.indexPath = this.indexPathOf(describe.id);
  }

  private indexPathOf(embedderId: string): string {
    return semanticIndexPath(this.indexDir, embedderId);
  }

  /** Lets `<provider>/<model>` embedders call the provider through the gateway's pipeline. */
  embedThrough(send: EmbedThroughGateway): void {
    this.viaGateway = send;
  }

  /**
   * Applies a config version's cache settings: the size cap, and the embedder (another one starts a new index,
   * under its own file; the old embedder's worker ends). Throws when the embedder cannot be used (an ONNX model
   * missing from the models folder), which refuses the config.
   */
  configure(settings: CacheSettings): void {
    this.maxEntries = settings.maxEntries;
    this.maxBytes = settings.maxBytes;
    if (this.overCap(true)) this.evictInBackground();
    if (settings.embedder === this.spec) return;
    const choice = chooseEmbedder(settings.embedder, settings.modelsDir, this.viaGateway);
    this.swapEmbedder(choice);
  }

  private swapEmbedder(choice: EmbedderChoice): void {
    const previous = this.embedder;
    const previousIndex = this.index;
    const previousPath = this.indexPath;
    const dirty = this.indexDirty;
    this.spec = choice.spec;
    this.embedderId = choice.id;
    this.dimensions = choice.dimensions;
    this.createEmbedder = choice.create;
    this.embedder = null;
    this.embedderState = 'idle';
    this.index = null;
    this.indexDirty = false;
    this.indexPath = this.indexPathOf(choice.id);
    if (this.indexState !== 'idle') this.indexState = 'loading';
    void (async () => {
      if (previousIndex && dirty) await previousIndex.save(previousPath).catch((err: unknown) => this.log.warn({ err }, 'cache: could not save the previous index'));
      await previous?.close();
      if (this.indexState === 'loading') await this.loadIndex();
    })();
    this.log.info({ embedder: choice.spec, id: choice.id }, 'cache: semantic embedder set');
  }

  /** Starts the semantic index (loaded from its file, else rebuilt) and the background sweep; called once the cache is used. */
  private ensureStarted(): void {
    if (this.indexState !== 'idle') return;
    this.indexState = 'loading';
    this.timer = setInterval(() => void this.maintain(), MAINTENANCE_MS);
    this.timer.unref();
    void this.loadIndex();
  }

  /** Loads the embedder's model ahead of the first semantic lookup (a lookup does not wait for a model load). */
  warmUp(): void {
    this.ensureStarted();
    if (this.embedderState !== 'idle') return;
    this.embedderState = 'loading';
    const embedder = this.embedderInUse() as Embedder & { ready?: () => Promise<void> };
    void (embedder.ready?.() ?? Promise.resolve())
      // One embedding too: the model's first inference compiles its kernels (a few hundred ms), which would
      // otherwise be the first lookup's, past its embedding budget. A failure here is the first lookup's to report.
      .then(() => embedder.embed(['tollgate warms up its embedder']).catch(() => undefined))
      .then(
        () => (this.embedderState = 'ready'),
        (err: unknown) => {
          this.embedderFailed();
          this.log.warn({ err }, 'cache: the embedder did not load');
        },
      );
  }

  private async loadIndex(): Promise<void> {
    const started = performance.now();
    const loading = this.embedderId;
    try {
      if (this.dimensions === 0) {
        // A provider's embedder: its first answer says the dimension the index needs.
        const embedder = this.embedderInUse() as Embedder & { ready?: () => Promise<void> };
        await embedder.ready?.();
        this.dimensions = embedder.dimensions;
        if (this.embedderId !== loading) return;
      }
      try {
        this.index = await VectorIndex.load(this.indexPath, this.dimensions);
      } catch (err) {
        // Missing, torn or corrupt: rebuilt from the vectors LMDB holds, in a worker; the exact tier serves meanwhile.
        if (this.store.count > 0) this.log.warn({ reason: (err as Error).message }, 'cache: semantic index file unusable, rebuilding it from the store');
        this.index = await this.buildIndex();
      }
      // The embedder changed while this index loaded: the new one's load is under way.
      if (this.embedderId !== loading) return;
      const { added, dropped } = this.reconcile(this.index);
      this.indexDirty = added + dropped > 0;
      this.indexState = 'ready';
      this.log.info({ vectors: this.index.size, added, dropped, ms: Math.round(performance.now() - started) }, 'cache: semantic index ready');
    } catch (err) {
      if (this.embedderId !== loading) return;
      this.indexState = 'failed';
      this.log.error({ err }, 'cache: the semantic index could not be loaded or rebuilt; the exact tier serves alone');
    }
  }

  /** A fresh index of every stored vector, built in a worker thread and loaded from the file it wrote. */
  private async buildIndex(): Promise<VectorIndex> {
    // Nothing stored yet (a first start): nothing to build. (The worker opens the store read-only, and lmdb-js
    // crashes the process opening a named database that was never written there read-only.)
    if (this.store.count === 0) return new VectorIndex(this.dimensions);
    mkdirSync(this.indexDir, { recursive: true });
    const built = await buildIndexInWorker({ lmdbPath: this.lmdbPath, dimensions: this.dimensions, embedder: this.embedderId, outPath: this.indexPath });
    // The worker opens the store read-only: the records it could not read are removed here.
    await this.dropUnreadable(built.unreadable);
    return VectorIndex.load(this.indexPath, this.dimensions);
  }

  /**
   * Makes an index agree with the store: vectors stored after the index was saved (or built) are added, labels
   * of entries deleted since are removed. Reads keys only, plus the entries the index lacks.
   */
  private reconcile(index: VectorIndex): { added: number; dropped: number } {
    const ids = new Set<number>();
    let added = 0;
    const storedWithoutIndex = this.storedWithoutIndex;
    this.storedWithoutIndex = new Set();
    const unreadable: number[] = [];
    for (const id of this.store.ids()) {
      ids.add(id);
      const reused = storedWithoutIndex.has(id);
      if (index.has(id) && !reused) continue;
      let entry: CacheEntry | undefined;
      try {
        entry = this.store.get(id);
      } catch {
        // Damaged: no vector to add (and a stale one of its id goes), the record removed in the background.
        unreadable.push(id);
      }
      if (entry?.vector && entry.embedder === this.embedderId) {
        // add() replaces the vector a reused id may still have in the file.
        index.add(id, vectorOf(entry.vector));
        added++;
      } else if (reused && index.has(id)) {
        index.remove(id);
      }
    }
    for (const id of unreadable) ids.delete(id);
    if (unreadable.length > 0) void this.dropUnreadable(unreadable);
    let dropped = 0;
    for (const label of index.labels()) {
      if (ids.has(label)) continue;
      index.remove(label);
      dropped++;
    }
    return { added, dropped };
  }

  private embedderFailed(): void {
    this.embedderState = 'failed';
    this.embedderFailedAt = Date.now();
  }

  /** Loads a failed embedder's model again, in the background (warmUp); lookups skip it until that is done. */
  private retryEmbedder(): void {
    this.embedderState = 'idle';
    this.warmUp();
  }

  /** The embedder, started on first use. */
  private embedderInUse(): Embedder {
    this.embedder ??= this.createEmbedder();
    return this.embedder;
  }

  /**
   * Exact tier first; then, when the policy allows, the semantic tier (skipped rather than waited for). An answer is
   * served before its own expiry and while it is younger than the policy's TTL (which may have been lowered since).
   *
   * Only an embedding is waited for: an exact hit, and a miss that does not search the semantic tier (the tier off, no
   * text question, the index or the embedder not ready), are answered synchronously, so a request the exact tier
   * decides pays no promise and no microtask hop for it (its caller takes either).
   */
  lookup(keys: CacheKeys, policy: CachePolicy, now: number): CacheLookup | Promise<CacheLookup> {
    this.ensureStarted();
    this.stats.lookups++;
    const oldest = now - policy.ttlSeconds * 1000;
    const exact = this.exactEntry(keys.exact);
    if (exact && exact.expiresAt > now && exact.createdAt >= oldest) return { hit: { tier: 'exact', entry: exact, similarity: 1 }, vector: null, semanticSkipped: null };
    if (!policy.semantic) return this.miss(null, 'semantic tier off');
    if (keys.conversation === null || keys.question === null) return this.miss(null, 'no text question');
    // No index to search yet (loading since start, or failed): answer at once rather than wait for an embedding
    // that could find nothing. The answer's vector is then made when it is stored, off the request's path.
    if (!this.indexReady()) return this.miss(null, this.indexUnreadyReason());
    // The same while the embedder's model is still loading and warming up (see warmUp).
    if (this.embedderState === 'loading') return this.miss(null, 'embedder loading');
    // Or failed: loaded again in the background once a while has passed, never on a request's path.
    if (this.embedderState === 'failed') {
      if (now - this.embedderFailedAt >= EMBEDDER_RETRY_MS) this.retryEmbedder();
      return this.miss(null, 'embedder unavailable');
    }
    return this.semanticLookup(keys, keys.conversation, keys.question, policy, now, oldest);
  }

  /** The semantic tier's search, once the exact tier missed and an embedding can be made and searched. */
  private async semanticLookup(keys: CacheKeys, conversation: string, question: string, policy: CachePolicy, now: number, oldest: number): Promise<CacheLookup> {
    let vector: Float32Array;
    const embedderId = this.embedderId;
    try {
      vector = await this.embed(conversation);
    } catch (err) {
      // The model cannot answer (it failed to load, its worker died): the next lookups skip it (see EMBEDDER_RETRY_MS).
      if (err instanceof EmbedderUnavailable && this.embedderId === embedderId) this.embedderFailed();
      const reason = err instanceof EmbedderBusy ? 'embedder busy' : err instanceof EmbedTimeout ? 'embedder slow' : `embedder failed: ${(err as Error).message}`;
      return this.miss(null, reason);
    }
    // Swapped for another embedder's while this one embedded: no index of this vector's space to search.
    if (!this.indexReady() || !this.index) return this.miss(vector, this.indexUnreadyReason());
    const checked = new Set<number>();
    for (let wanted = CANDIDATES; ; wanted *= 8) {
      const matches = this.index.search(vector, wanted);
      for (const match of matches) {
        if (match.similarity < policy.threshold) return { hit: null, vector, semanticSkipped: null };
        // A wider search returns the closer ones again (perhaps in another order: HNSW is approximate).
        if (checked.has(match.label)) continue;
        checked.add(match.label);
        const entry = this.readEntry(match.label);
        if (!entry || entry.expiresAt <= now || entry.createdAt < oldest || entry.semanticScope !== keys.semanticScope || entry.question === null) continue;
        if (!textsLexicallyCompatible(question, entry.question)) continue;
        return { hit: { tier: 'semantic', entry, similarity: match.similarity }, vector, semanticSkipped: null };
      }
      // Every candidate was above the threshold and none could answer: look further, unless there is no further.
      if (matches.length < wanted || wanted >= MAX_CANDIDATES) return { hit: null, vector, semanticSkipped: null };
    }
  }

  /**
   * A stored entry read for a lookup; undefined, as for none, when it cannot be read (a damaged record, a read that
   * fails): the cache only saves work, so a request it cannot answer goes to the provider rather than fail with 500.
   */
  private readEntry(id: number): CacheEntry | undefined {
    try {
      return this.store.get(id);
    } catch (err) {
      this.reportUnreadable(id, err);
      return undefined;
    }
  }

  /** The entry stored under an exact key (see readEntry); its id is read apart, so a damaged record is known by it. */
  private exactEntry(key: string): CacheEntry | undefined {
    let id: number | undefined;
    try {
      id = this.store.exactId(key);
    } catch (err) {
      this.reportUnreadable(`exact:${key}`, err);
      return undefined;
    }
    return id === undefined ? undefined : this.readEntry(id);
  }

  /** Logs a record a lookup could not read, once per record (see reportedUnreadable). */
  private reportUnreadable(record: number | string, err: unknown): void {
    if (this.reportedUnreadable.has(record)) return;
    if (this.reportedUnreadable.size >= REPORTED_KEPT) this.reportedUnreadable.clear();
    this.reportedUnreadable.add(record);
    const where = typeof record === 'number' ? { entryId: record } : { exactKey: record.slice('exact:'.length) };
    this.log.warn({ err, ...where }, 'cache: a stored answer could not be read; taken as a miss (logged once for this record)');
  }

  private indexReady(): boolean {
    return this.indexState === 'ready' && this.index !== null;
  }

  private indexUnreadyReason(): string {
    return this.indexState === 'failed' ? 'index unavailable' : 'index loading';
  }

  private miss(vector: Float32Array | null, skipped: string | null): CacheLookup {
    if (skipped !== null && skipped !== 'semantic tier off') this.stats.semanticSkipped++;
    return { hit: null, vector, semanticSkipped: skipped };
  }

  private async embed(text: string): Promise<Float32Array> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new EmbedTimeout()), EMBED_BUDGET_MS);
    });
    try {
      const [vector] = await Promise.race([this.embedderInUse().embed([text]), late]);
      if (!vector) throw new Error('the embedder returned no vector');
      return vector;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Counts a lookup's result (the stage calls it once it knows whether the hit is served or only shadowed). */
  recordResult(result: 'hit-exact' | 'hit-semantic' | 'miss' | 'shadow-hit', savedUsd: number): void {
    if (result === 'hit-exact') this.stats.exactHits++;
    else if (result === 'hit-semantic') this.stats.semanticHits++;
    else if (result === 'shadow-hit') this.stats.shadowHits++;
    else this.stats.misses++;
    this.stats.savedUsd += savedUsd;
  }

  /** Counts an exact hit served from an identical request's answer as it arrived (see `flights`). */
  noteCoalesced(): void {
    this.stats.coalesced++;
  }

  /** Counts a streamed answer not stored because what it made grew past `max_response_bytes` (see the cache stage). */
  noteTooLarge(): void {
    this.stats.tooLarge++;
  }

  /** Records a hit served (recency for eviction, the entry's hit count). */
  served(hit: CacheHit, now: number): void {
    this.store.touch(hit.entry, now);
  }

  noteShadowHit(hit: ShadowHit): void {
    this.shadow.push(hit);
    if (this.shadow.length > SHADOW_KEPT) this.shadow.shift();
  }

  /**
   * Stores an answer after a miss; the semantic index learns its vector. Without one (the lookup skipped the
   * semantic tier) and with `conversation`, the vector is made now, off the request's path, with no time limit.
   * `askedAt`: when its request arrived; resolves with null, storing nothing, when a delete selecting the answer ran
   * since then.
   */
  async put(entry: NewCacheEntry, given: Float32Array | null, conversation: string | null, askedAt = entry.createdAt): Promise<CacheEntry | null> {
    let vector = given;
    // A failed embedder is not waited for (a load that fails again) nor started anew here: stored without a vector,
    // the answer still serves the exact tier.
    if (vector === null && conversation !== null && this.embedderState !== 'failed') {
      try {
        [vector = null] = await this.embedderInUse().embed([conversation]);
      } catch {
        vector = null;
      }
    }
    if (this.purgedSince(askedAt, entry)) return null;
    const stored: CacheEntry = withFields(entry, {
      id: this.store.newId(),
      vector: vector ? new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength).slice() : null,
      embedder: vector ? this.embedderId : null,
      hits: 0,
      usedAt: entry.createdAt,
    });
    const replaced = await this.store.put(stored);
    if (replaced !== null) this.index?.remove(replaced);
    if (vector && this.index) {
      this.index.add(stored.id, vector);
      this.indexDirty = true;
    } else if (!this.index && this.indexState !== 'failed') {
      this.storedWithoutIndex.add(stored.id);
    }
    this.stats.stored++;
    if (this.overCap(--this.storesUntilByteCheck <= 0)) this.evictInBackground();
    return stored;
  }

  /**
   * Deletes every entry, or those of a model, key or team; resolves with how many went. Everything goes at once;
   * a selection is read in slices with the event loop free between them (a full read of 100,000 entries would
   * hold it for about half a second).
   */
  async delete(selector: CacheSelector): Promise<number> {
    const now = Date.now();
    this.purges = this.purges.filter((purge) => purge.at > now - PURGES_KEPT_MS).slice(-(PURGES_KEPT - 1));
    this.purges.push({ at: now, selector });
    const all = selector.model === undefined && selector.keyId === undefined && selector.teamId === undefined;
    if (all) {
      const count = this.store.count;
      await this.store.clear();
      if (this.index) {
        this.index = new VectorIndex(this.index.dimensions);
        this.indexDirty = true;
      }
      return count;
    }
    const ids: number[] = [];
    const unreadable: number[] = [];
    let read = 0;
    for (const entry of this.store.all(unreadable)) {
      if (selects(selector, entry)) ids.push(entry.id);
      if (++read % DELETE_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    // Nobody's answer any more (it can only be a miss): it goes too, and is not counted as the selection's.
    await this.dropUnreadable(unreadable);
    await this.store.remove(ids);
    for (const id of ids) this.index?.remove(id);
    if (ids.length > 0) this.indexDirty = true;
    // Not awaited (the caller's answer does not wait for a rebuild), so its failure is caught here: a rejection left
    // unhandled ends the process (a store removed under a running build, say, at shutdown).
    if (this.index?.needsCompaction()) void this.compact().catch((err: unknown) => this.log.warn({ err }, 'cache: compacting the semantic index failed'));
    return ids.length;
  }

  /** Removes records found unreadable (logged): a damaged record is only ever a miss, and would be met again. */
  private async dropUnreadable(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    const removed = await this.store.removeUnreadable(ids).catch((err: unknown) => {
      this.log.warn({ err }, 'cache: unreadable stored answers could not be removed');
      return 0;
    });
    for (const id of ids) this.index?.remove(id);
    this.log.warn({ ids: ids.slice(0, 20), count: ids.length, removed }, 'cache: stored answers that could not be read were skipped');
  }

  /** Whether a delete that selects `entry` ran at or after `askedAt` (such an answer is neither stored nor shared). */
  purgedSince(askedAt: number, entry: NewCacheEntry): boolean {
    for (let i = this.purges.length - 1; i >= 0; i--) {
      const purge = this.purges[i] as { at: number; selector: CacheSelector };
      if (purge.at < askedAt) return false;
      if (selects(purge.selector, entry)) return true;
    }
    return false;
  }

  /**
   * What is still loading in the background (for /health): the semantic index (read from its file, or rebuilt) and
   * the embedder's model. Lookups meanwhile answer from the exact tier and count the semantic tier as skipped.
   */
  loading(): string[] {
    const loading: string[] = [];
    if (this.indexState === 'loading') loading.push('cache_semantic_index');
    if (this.embedderState === 'loading') loading.push('cache_embedder');
    return loading;
  }

  /** What GET /api/cache reports. */
  report(): Record<string, unknown> {
    const answered = this.stats.exactHits + this.stats.semanticHits;
    return {
      entries: this.store.count,
      size_bytes: this.store.sizeBytes(),
      max_entries: Number.isFinite(this.maxEntries) ? this.maxEntries : null,
      max_bytes: this.maxBytes,
      semantic_index: { state: this.indexState, vectors: this.index?.size ?? 0, deleted: this.index?.deletedCount ?? 0 },
      embedder: { id: this.embedder?.id ?? null, state: this.embedderState },
      since_start: {
        lookups: this.stats.lookups,
        hits: { exact: this.stats.exactHits, semantic: this.stats.semanticHits },
        misses: this.stats.misses,
        hit_ratio: this.stats.lookups === 0 ? 0 : answered / this.stats.lookups,
        hit_ratio_by_tier: {
          exact: this.stats.lookups === 0 ? 0 : this.stats.exactHits / this.stats.lookups,
          semantic: this.stats.lookups === 0 ? 0 : this.stats.semanticHits / this.stats.lookups,
        },
        semantic_skipped: this.stats.semanticSkipped,
        stored: this.stats.stored,
        not_stored: { too_large: this.stats.tooLarge },
        saved_usd: this.stats.savedUsd,
        shadow_hits: this.stats.shadowHits,
        coalesced: this.stats.coalesced,
      },
      in_flight: { leaders: this.flights.size, waiting: this.flights.waiting },
      shadow_hits: [...this.shadow].reverse(),
    };
  }

  /** Sweeps expired entries (by the expiry index: only what expired is read) and saves the index when it changed. */
  private async maintain(): Promise<void> {
    try {
      for (;;) {
        const expired = this.store.expired(Date.now(), SWEEP_BATCH);
        if (expired.length === 0) break;
        await this.store.remove(expired);
        for (const id of expired) this.index?.remove(id);
        this.indexDirty = true;
        if (expired.length < SWEEP_BATCH) break;
      }
      this.store.recount();
      if (this.index?.needsCompaction()) await this.compact();
      await this.saveIndex();
    } catch (err) {
      this.log.warn({ err }, 'cache: background maintenance failed');
    }
  }

  /** Replaces an index with many removed slots by a fresh one, built in a worker from the store. */
  private async compact(): Promise<void> {
    if (this.indexState !== 'ready' || this.compacting) return;
    this.compacting = true;
    try {
      // The current index is saved first: the builder writes to the same file, and a failed build leaves a good one.
      await this.saveIndex();
      const fresh = await this.buildIndex();
      this.reconcile(fresh);
      this.index = fresh;
      this.indexDirty = true;
    } finally {
      this.compacting = false;
    }
  }

  private async saveIndex(): Promise<void> {
    if (!this.indexDirty || !this.index) return;
    this.indexDirty = false;
    // Created on the first save: a gateway that never used the cache leaves no folder behind.
    mkdirSync(this.indexDir, { recursive: true });
    await this.index.save(this.indexPath);
  }

  /**
   * Whether the cache holds more than a cap allows: more entries than max_entries, or (when `checkBytes`) more bytes
   * than max_bytes. Reading the store's size costs four database statistics (about 40 µs), so it is read again only
   * after as many answers as the room left would hold at the entries' average size (between 1 and
   * MAX_STORES_BETWEEN_BYTE_CHECKS): rarely while the cache is small, after each answer at the cap.
   */
  private overCap(checkBytes: boolean): boolean {
    if (this.store.count > this.maxEntries) return true;
    if (!checkBytes || this.maxBytes === null) return false;
    const size = this.store.sizeBytes();
    const count = this.store.count;
    const room = this.maxBytes - size;
    // An empty cache has no average yet: read again at the next answer.
    const between = count === 0 || size === 0 || room <= 0 ? 1 : Math.floor(room / (size / count));
    this.storesUntilByteCheck = Math.min(MAX_STORES_BETWEEN_BYTE_CHECKS, Math.max(1, between));
    return room < 0;
  }

  /**
   * How many of the least recently used entries go now: past max_entries, the excess and 1% of the cap more
   * (rounded down: none for a cap under 100), so a large cache does not run eviction on every insert and a small one
   * keeps what it may; past max_bytes, the share of the entries that the excess bytes are, and 1% more (answers
   * differ in size: the check runs again after, until the store is under the cap).
   */
  private evictionCount(): number {
    const count = this.store.count;
    let wanted = count - this.maxEntries;
    wanted = wanted > 0 ? wanted + Math.floor(this.maxEntries / 100) : 0;
    if (this.maxBytes !== null && count > 0) {
      const size = this.store.sizeBytes();
      if (size > this.maxBytes) wanted = Math.max(wanted, Math.ceil((count * (size - this.maxBytes)) / size) + Math.floor(count / 100), 1);
    }
    return Math.min(count, wanted);
  }

  /** Over a cap: the least recently used entries go (see evictionCount), in the background. */
  private evictInBackground(): void {
    if (this.evicting || (!Number.isFinite(this.maxEntries) && this.maxBytes === null)) return;
    this.evicting = true;
    setImmediate(() => {
      void (async () => {
        try {
          // A hit recorded just before must count: its recency is committed first.
          await this.store.touchesSettled();
          const wanted = this.evictionCount();
          if (wanted <= 0) return;
          const victims = this.store.leastRecentlyUsed(wanted);
          await this.store.remove(victims);
          for (const id of victims) this.index?.remove(id);
          this.indexDirty = true;
        } catch (err) {
          this.log.warn({ err }, 'cache: eviction failed');
          return;
        } finally {
          this.evicting = false;
        }
        // Answers stored while this ran (their own eviction was skipped) may have passed a cap again, and bytes freed
        // by one round may not have been enough.
        if (this.overCap(true)) this.evictInBackground();
      })();
    });
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    try {
      await this.saveIndex();
    } catch (err) {
      this.log.warn({ err }, 'cache: could not save the semantic index');
    }
    await this.embedder?.close();
    this.embedder = null;
  }
}

/** Where the semantic index of an embedder's vectors is saved: one file per embedder (another model's vectors are another space). */
export function semanticIndexPath(indexDir: string, embedderId: string): string {
  const tag = createHash('sha256').update(embedderId).digest('hex').slice(0, 12);
  return resolve(indexDir, `semantic-${tag}.hnsw`);
}

/** The embedding took longer than a lookup may wait. */
class EmbedTimeout extends Error {
  constructor() {
    super(`no embedding within ${EMBED_BUDGET_MS} ms`);
  }
}

/** A stored vector's Float32 view (copied: LMDB's buffers are reused). */
function vectorOf(bytes: Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes);
  return new Float32Array(copy.buffer, copy.byteOffset, copy.byteLength / 4);
}
