import { bodyChars, ERROR_INDEX_COMPLETE, errorIndexValue, MAX_SCANNED_BODY_CHARS, queryRequestLog, type RequestLogPage, type RequestLogQuery } from './request-log-query.js';
import { newRequestId } from '../core/request-id.js';
import type { Database, RootDatabase } from 'lmdb';
import { commit, commitSoon, commitSoonUnawaited, commitWaiting } from '../store/commit.js';
import type { EventBus } from '../bus/bus.js';
import type { GatewayError } from '../core/errors.js';
import {
  KEY_READ_ONLY_FIELDS,
  TEAM_READ_ONLY_FIELDS,
  keyCreateSchema,
  keyPatchSchema,
  teamCreateSchema,
  teamPatchSchema,
  validateBody,
} from './governance-schemas.js';
import { hashSecret, newKeyId, newKeySecret, newTeamId, secretPrefix } from './key-secrets.js';
import { periodChangedTo, periodEnded, periodHolding, periodStartingNow, roundUsd } from './periods.js';
import type { PeriodUsage, TeamRecord, VirtualKeyRecord } from '../core/identity.js';
import type { RequestLogEntry, VirtualKeyView } from './types.js';
import { gatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';
import { openRecords, pageBytes, recordCount } from '../store/records.js';
import { RequestLogWrites, type WrittenAfterPage, type WrittenAfterQuery } from './request-log-writes.js';

/** A request-log entry as handed to `recordRequest`: without an id (or with an empty one) the store assigns one. */
export type RequestLogInput = Omit<RequestLogEntry, 'id'> & { id?: string };

export { MAX_LOG_LIMIT } from './request-log-query.js';
export type { RequestLogQuery } from './request-log-query.js';

/** Index entries a key listing reads between two turns of the event loop (1,000 held it 66 ms on a loaded CI-sized machine: test/e2e/keys-scale.test.ts). */
const KEY_SCAN_CHUNK = 250;

/** `last_used_at` is kept to this: a key's use is written at most once per this many ms. */
const LAST_USED_PRECISION_MS = 60_000;

/** Thrown inside a transaction callback only before it wrote anything (lmdb does not roll back a throwing callback). */
class Refused {
  constructor(readonly error: GatewayError) {}
}

function keyNotFound(id: string): GatewayError {
  return gatewayError('key_not_found', `No virtual key with id '${quoteInput(id)}'.`);
}

function teamNotFound(id: string): GatewayError {
  return gatewayError('team_not_found', `No team with id '${quoteInput(id)}'.`);
}

function unknownTeam(id: string): GatewayError {
  return gatewayError('invalid_team', `No team with id '${quoteInput(id)}'; create it first with POST /api/teams.`, { param: 'team' });
}

/** Where a key stands in the listing order (the creation index's entry): its creation time and id. */
export type KeyPosition = [createdAt: string, id: string];

function byCreation<T extends { created_at: string; id: string }>(a: T, b: T): number {
  return a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * Fills the creation-order index of the keys when it does not hold them all: on the first start after an upgrade
 * from a version without it (its keys and the index are otherwise written together).
 */
function indexKeysByCreation(root: RootDatabase, keys: Database<VirtualKeyRecord, string>, index: Database<null, [string, string]>): void {
  if (recordCount(index) === recordCount(keys)) return;
  index.clearSync();
  root.transactionSync(() => {
    for (const { value } of keys.getRange()) void index.put([value.created_at, value.id], null);
  });
}

/** Drops keys whose value is undefined, so a patch never overwrites a field with undefined. */
function defined<T extends object>(patch: T): Partial<T> {
  return Object.fromEntries(Object.entries(patch).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/**
 * Virtual keys, teams, their spend counters and the request log, in named databases of the gateway's LMDB
 * environment: `keys` (id -> record), `key-hashes` (sha256 of the secret -> id), `teams` (id -> record),
 * `request-log` (time-sortable id -> entry) and `request-log-by-key` ([key id, log id] -> null, the index
 * behind `requestLog({ key_id })`).
 *
 * Every read-modify-write runs inside one `root.transaction` callback, so admin edits and the spend added by
 * `recordSpend` never lose each other's updates. The request path's writes commit through store/commit.ts,
 * synchronously when there is no fsync: `recordSpend` at the end of its event-loop turn (before the answer ends),
 * `recordRequest` with the other background writes of the next few milliseconds.
 * The lookups the request path needs (`findKeyBySecret`, `getKeyRecord`, `getTeamRecord`, `currentUsage`) are
 * synchronous lmdb reads.
 */
/**
 * What one charge did to its key's and team's spend in the current period, read inside the transaction that made it
 * (so charges committed together each see the one before them), with the budgets as they were then.
 */
export interface SpendCharged {
  key: { before: number; after: number; budget: number | null } | null;
  team: { before: number; after: number; budget: number | null } | null;
}

/**
 * The object cache of the key and team records, which every keyed request's spend commit rewrites (a new object for
 * the same id each time). By default lmdb-js's cache (weak-lru-cache) registers every value it is given with a
 * FinalizationRegistry and keeps a WeakRef to it, so each rewrite left one more registration for the garbage collector
 * to process and a finalization callback to run once the replaced record died. `deferRegister` registers a value only
 * when the cache's LRU lets it go, which a record rewritten on every request never is: weak-lru-cache's own advice for
 * caches dominated by replacing the same entries: 10.0 → 9.4 µs a request in bench/key-record-cache.ts. Reads and
 * writes see the same objects as before. A new options object per database (lmdb-js hands it to the cache as is).
 */
function rewrittenRecordsCache(): { deferRegister: true } {
  return { deferRegister: true };
}

export class GovernanceStore {
  private readonly keys: Database<VirtualKeyRecord, string>;
  private readonly keyHashes: Database<string, string>;
  /** [created_at, id] -> null for every key: the listing's order, so a page reads only its own keys (ids are random). */
  private readonly keysByCreation: Database<null, [string, string]>;
  private readonly teams: Database<TeamRecord, string>;
  private readonly log: Database<RequestLogEntry, string>;
  private readonly logByKey: Database<null, [string, string]>;
  /** The failed requests of the log (status 400 and up), by log id: status and lower-cased error message. */
  private readonly logErrors: Database<string, string>;
  /** The log in write order: each entry's write_seq -> its id (what a log shipper resumes from). */
  private readonly logWrites: RequestLogWrites;
  /** When each key's last use was last written (epoch ms), so it is written at most once a minute (see keyUsed). */
  private readonly lastUseWritten = new Map<string, number>();

  constructor(
    private readonly root: RootDatabase,
    private readonly bus: EventBus,
    private readonly now: () => Date = () => new Date(),
  ) {
    // Cached (lmdb-js's object cache, kept current by this store's own puts): every keyed request reads its key
    // and team twice (auth, then the spend commit) and rewrites the key; decoding the record on each read was about a
    // fifth of a keyed request's extra CPU (msgpack records re-read their structure after each write). Records read
    // from these databases are shared objects: never mutate one, write a new one (as every method here does).
    this.keys = openRecords<VirtualKeyRecord, string>(root, { name: 'keys', cache: rewrittenRecordsCache() });
    this.keyHashes = root.openDB<string, string>({ name: 'key-hashes', cache: true });
    this.keysByCreation = root.openDB<null, [string, string]>({ name: 'keys-by-creation' });
    indexKeysByCreation(root, this.keys, this.keysByCreation);
    this.teams = openRecords<TeamRecord, string>(root, { name: 'teams', cache: rewrittenRecordsCache() });
    this.log = openRecords<RequestLogEntry, string>(root, { name: 'request-log' });
    this.logByKey = root.openDB<null, [string, string]>({ name: 'request-log-by-key' });
    this.logErrors = root.openDB<string, string>({ name: 'request-log-errors' });
    this.logWrites = new RequestLogWrites(root);
  }

  /** The time governance runs on (budget periods, key expiry): the gateway's clock. */
  nowMs(): number {
    return this.now().getTime();
  }

  // ---- virtual keys ---------------------------------------------------------------------------------

  async createKey(input: unknown): Promise<{ record: VirtualKeyView; key: string }> {
    const fields = validateBody(keyCreateSchema, input, KEY_READ_ONLY_FIELDS);
    if (fields.team !== null && !this.teams.get(fields.team)) throw unknownTeam(fields.team);
    const secret = newKeySecret();
    const at = this.now();
    const stamp = at.toISOString();
    const record: VirtualKeyRecord = {
      id: newKeyId(),
      name: fields.name,
      key_prefix: secretPrefix(secret),
      team: fields.team,
      models: fields.models,
      model_rate_limits: fields.model_rate_limits,
      budget: fields.budget,
      budget_period: fields.budget_period,
      ...periodStartingNow(fields.budget_period, at),
      rate_limit: fields.rate_limit,
      tokens_per_minute: fields.tokens_per_minute,
      expires_at: fields.expires_at,
      disabled: fields.disabled,
      metadata: fields.metadata,
      plugins: fields.plugins,
      cache: fields.cache,
      guardrails: fields.guardrails,
      mcp: fields.mcp,
      total_spend: 0,
      total_requests: 0,
      last_used_at: null,
      created_at: stamp,
      updated_at: stamp,
      key_hash: hashSecret(secret),
    };
    await this.write(() => {
      // The team may have been deleted since the check above.
      if (record.team !== null && !this.teams.get(record.team)) throw new Refused(unknownTeam(record.team));
      this.keys.put(record.id, record);
      this.keyHashes.put(record.key_hash, record.id);
      this.keysByCreation.put([record.created_at, record.id], null);
    });
    this.bus.emit('key.created', { keyId: record.id, name: record.name, team: record.team });
    return { record: this.keyView(record), key: secret };
  }

  /** Every key, oldest first (then by id). */
  listKeys(): VirtualKeyView[] {
    const out: VirtualKeyView[] = [];
    for (const [, id] of this.keysByCreation.getKeys()) {
      const record = this.keys.get(id);
      if (record) out.push(this.keyView(record));
    }
    return out;
  }

  /**
   * Each key's id, team and spend in its current budget period, in no particular order: what the spend gauge of
   * /metrics reads at every scrape. No view of each key is made (its fields copied, its hash left out), which made a
   * scrape hold the event loop 55-150 ms at 20,000 keys.
   */
  keySpends(): Array<{ id: string; team: string | null; spend: number }> {
    const out: Array<{ id: string; team: string | null; spend: number }> = [];
    const now = this.now();
    for (const { value } of this.keys.getRange()) if (value) out.push({ id: value.id, team: value.team ?? null, spend: this.usageAt(value, now).spend });
    return out;
  }

  /**
   * One page of the keys in listing order (oldest first), starting just after the key `after` and keeping those
   * `matches` accepts; undefined when `after` names no key. Stops once the page (and one more key, for `hasMore`) is
   * found: a page costs what it holds, not every key (a search that matches little still reads them all, a chunk at
   * a time with other work let in between).
   */
  /**
   * A page of keys in listing order after `after`: a position ([created_at, id], see keyCursor: found even when that
   * key was deleted since) or, as before positions, the id of a key that still exists. Undefined for an unknown id.
   */
  async keyPage(limit: number, after: KeyPosition | string | undefined, matches: (key: VirtualKeyRecord) => boolean): Promise<{ data: VirtualKeyView[]; hasMore: boolean } | undefined> {
    let from: KeyPosition | undefined;
    if (typeof after === 'string') {
      const cursor = this.keys.get(after);
      if (!cursor) return undefined;
      from = [cursor.created_at, cursor.id];
    } else from = after;
    const data: VirtualKeyView[] = [];
    for await (const chunk of this.keyChunks(from)) {
      for (const record of chunk) {
        if (!matches(record)) continue;
        if (data.length === limit) return { data, hasMore: true };
        data.push(this.keyView(record));
      }
    }
    return { data, hasMore: false };
  }

  /** Every key `matches` accepts, in listing order, a chunk at a time with other work let in between. */
  async *matchingKeys(matches: (key: VirtualKeyRecord) => boolean): AsyncGenerator<VirtualKeyView[]> {
    for await (const chunk of this.keyChunks(undefined)) yield chunk.filter(matches).map((record) => this.keyView(record));
  }

  /**
   * The key records in listing order after the index entry `from` (from the first without it), KEY_SCAN_CHUNK at a
   * time, a turn of the event loop between chunks. A key deleted meanwhile is left out; resuming from an index
   * entry, not a key, the walk goes on past it.
   */
  private async *keyChunks(from: KeyPosition | undefined): AsyncGenerator<VirtualKeyRecord[]> {
    for (let first = true; ; first = false) {
      if (!first) await new Promise<void>((resolve) => setImmediate(resolve));
      const entries = [...this.keysByCreation.getKeys({ ...(from ? { start: from } : {}), limit: KEY_SCAN_CHUNK + 1 })];
      // The range starts at `from` itself when it is still there: skip it.
      const fresh = from && entries[0]?.[1] === from[1] ? entries.slice(1) : entries.slice(0, KEY_SCAN_CHUNK);
      const records: VirtualKeyRecord[] = [];
      for (const [, id] of fresh) {
        const record = this.keys.get(id);
        if (record) records.push(record);
      }
      yield records;
      if (fresh.length < KEY_SCAN_CHUNK) return;
      from = fresh.at(-1);
    }
  }

  /** The keys of these ids, in that order; an id that names no key (deleted, mistyped) is left out. */
  keysByIds(ids: readonly string[]): VirtualKeyView[] {
    const out: VirtualKeyView[] = [];
    for (const id of ids) {
      const record = this.keys.get(id);
      if (record) out.push(this.keyView(record));
    }
    return out;
  }

  getKey(id: string): VirtualKeyView {
    const record = this.keys.get(id);
    if (!record) throw keyNotFound(id);
    return this.keyView(record);
  }

  async updateKey(id: string, patch: unknown): Promise<VirtualKeyView> {
    return (await this.changeKey(id, patch)).after;
  }

  /**
   * Applies a patch; returns the key as it was just before it (read in the same transaction, so concurrent changes
   * each see the one before them, as the audit log must) and as it left it.
   */
  async changeKey(id: string, patch: unknown): Promise<{ before: VirtualKeyView; after: VirtualKeyView }> {
    const changes = defined(validateBody(keyPatchSchema, patch, KEY_READ_ONLY_FIELDS));
    if (!this.keys.get(id)) throw keyNotFound(id);
    if (typeof changes.team === 'string' && !this.teams.get(changes.team)) throw unknownTeam(changes.team);
    const { before, after } = await this.write(() => {
      const current = this.keys.get(id);
      if (!current) throw new Refused(keyNotFound(id));
      if (typeof changes.team === 'string' && !this.teams.get(changes.team)) throw new Refused(unknownTeam(changes.team));
      if (Object.keys(changes).length === 0) return { before: current, after: current };
      const at = this.now();
      const next: VirtualKeyRecord = { ...current, ...this.usageAt(current, at), ...changes, updated_at: at.toISOString() };
      if (changes.budget_period !== undefined && changes.budget_period !== current.budget_period) {
        Object.assign(next, periodChangedTo(changes.budget_period, at, next, next));
      }
      this.keys.put(id, next);
      return { before: current, after: next };
    });
    return { before: this.keyView(before), after: this.keyView(after) };
  }

  /** A new secret; `previous` is the key as it was just before (read in the same transaction). */
  async rotateKey(id: string): Promise<{ record: VirtualKeyView; key: string; previous: VirtualKeyView }> {
    if (!this.keys.get(id)) throw keyNotFound(id);
    const secret = newKeySecret();
    const { previous, rotated } = await this.write(() => {
      const current = this.keys.get(id);
      if (!current) throw new Refused(keyNotFound(id));
      const next: VirtualKeyRecord = { ...current, key_hash: hashSecret(secret), key_prefix: secretPrefix(secret), updated_at: this.now().toISOString() };
      this.keyHashes.remove(current.key_hash);
      this.keyHashes.put(next.key_hash, id);
      this.keys.put(id, next);
      return { previous: current, rotated: next };
    });
    return { record: this.keyView(rotated), key: secret, previous: this.keyView(previous) };
  }

  /**
   * Removes the key and its hash (the secret stops working once this resolves); its request-log rows stay. Resolves
   * with the key as it was when removed.
   */
  async deleteKey(id: string): Promise<VirtualKeyView> {
    if (!this.keys.get(id)) throw keyNotFound(id);
    const removed = await this.write(() => {
      const current = this.keys.get(id);
      if (!current) throw new Refused(keyNotFound(id));
      this.keyHashes.remove(current.key_hash);
      this.keysByCreation.remove([current.created_at, current.id]);
      this.keys.remove(id);
      return current;
    });
    return this.keyView(removed);
  }

  /** The stored record for a presented secret, or undefined. Synchronous: a hash and two lmdb reads. */
  findKeyBySecret(secret: string): VirtualKeyRecord | undefined {
    const hash = hashSecret(secret);
    const id = this.keyHashes.get(hash);
    if (id === undefined) return undefined;
    const record = this.keys.get(id);
    return record && record.key_hash === hash ? record : undefined;
  }

  /**
   * Notes that a request with the key was let through now. Written at most once a minute per key (`last_used_at` is
   * to the minute), with the background writes, so a keyed request pays a map lookup; the record is read again in
   * the write, so a change or a charge committed meanwhile is kept.
   */
  keyUsed(id: string): void {
    const now = this.nowMs();
    const written = this.lastUseWritten.get(id);
    if (written !== undefined && now - written < LAST_USED_PRECISION_MS) return;
    if (this.lastUseWritten.size >= 100_000) this.lastUseWritten.clear();
    this.lastUseWritten.set(id, now);
    const stamp = new Date(now).toISOString();
    // A last-use time that could not be written is not worth failing (or even delaying) a request for.
    commitSoon(this.root, () => {
      const current = this.keys.get(id);
      if (current) this.keys.put(id, { ...current, last_used_at: stamp });
    }).catch(() => this.lastUseWritten.delete(id));
  }

  /** The stored record as is (counters of the period it was last written in: apply `currentUsage`). */
  getKeyRecord(id: string): VirtualKeyRecord | undefined {
    return this.keys.get(id);
  }

  // ---- teams ----------------------------------------------------------------------------------------

  async createTeam(input: unknown): Promise<TeamRecord> {
    const fields = validateBody(teamCreateSchema, input, TEAM_READ_ONLY_FIELDS);
    const at = this.now();
    const stamp = at.toISOString();
    const record: TeamRecord = {
      id: newTeamId(),
      name: fields.name,
      budget: fields.budget,
      budget_period: fields.budget_period,
      ...periodStartingNow(fields.budget_period, at),
      rate_limit: fields.rate_limit,
      tokens_per_minute: fields.tokens_per_minute,
      metadata: fields.metadata,
      plugins: fields.plugins,
      cache: fields.cache,
      guardrails: fields.guardrails,
      mcp: fields.mcp,
      created_at: stamp,
      updated_at: stamp,
    };
    await this.teams.put(record.id, record);
    return record;
  }

  listTeams(): TeamRecord[] {
    const out: TeamRecord[] = [];
    for (const { value } of this.teams.getRange()) out.push(this.teamView(value));
    return out.sort(byCreation);
  }

  getTeam(id: string): TeamRecord {
    const record = this.teams.get(id);
    if (!record) throw teamNotFound(id);
    return this.teamView(record);
  }

  async updateTeam(id: string, patch: unknown): Promise<TeamRecord> {
    return (await this.changeTeam(id, patch)).after;
  }

  /** Applies a patch; returns the team just before it and after it, as changeKey does. */
  async changeTeam(id: string, patch: unknown): Promise<{ before: TeamRecord; after: TeamRecord }> {
    const changes = defined(validateBody(teamPatchSchema, patch, TEAM_READ_ONLY_FIELDS));
    if (!this.teams.get(id)) throw teamNotFound(id);
    const { before, after } = await this.write(() => {
      const current = this.teams.get(id);
      if (!current) throw new Refused(teamNotFound(id));
      if (Object.keys(changes).length === 0) return { before: current, after: current };
      const at = this.now();
      const next: TeamRecord = { ...current, ...this.usageAt(current, at), ...changes, updated_at: at.toISOString() };
      if (changes.budget_period !== undefined && changes.budget_period !== current.budget_period) {
        Object.assign(next, periodChangedTo(changes.budget_period, at, next, null));
      }
      this.teams.put(id, next);
      return { before: current, after: next };
    });
    return { before: this.teamView(before), after: this.teamView(after) };
  }

  /** 409 `team_in_use` while any key still names the team. Resolves with the team as it was when removed. */
  async deleteTeam(id: string): Promise<TeamRecord> {
    if (!this.teams.get(id)) throw teamNotFound(id);
    const removed = await this.write(() => {
      const current = this.teams.get(id);
      if (!current) throw new Refused(teamNotFound(id));
      const members: string[] = [];
      for (const { value } of this.keys.getRange()) if (value.team === id) members.push(value.id);
      if (members.length > 0) {
        const shown = members.slice(0, 5).join(', ') + (members.length > 5 ? ', ...' : '');
        throw new Refused(
          gatewayError('team_in_use', `Team '${id}' still has ${members.length} key${members.length === 1 ? '' : 's'} (${shown}); move or delete them first.`),
        );
      }
      this.teams.remove(id);
      return current;
    });
    return this.teamView(removed);
  }

  getTeamRecord(id: string): TeamRecord | undefined {
    return this.teams.get(id);
  }

  // ---- usage ----------------------------------------------------------------------------------------

  /** The record's usage in its CURRENT period: if period_resets_at has passed, zeroed counters of the new period (pure, no write). */
  currentUsage(record: VirtualKeyRecord | TeamRecord): PeriodUsage {
    return this.usageAt(record, this.now());
  }

  /**
   * Writes one request's log entry (the request-log subscriber calls this for every request that reached the
   * pipeline).
   */
  async recordRequest(entry: RequestLogInput): Promise<void> {
    const id = entry.id || this.newRequestLogId();
    // The entry and its index rows in one transaction, shared with the other background writes of the moment.
    await commitSoon(this.root, () => this.writeLogEntry(entry, id));
  }

  /**
   * `recordRequest` for the request-log subscriber, which awaits no entry: no promise per request; `failed` hears a
   * write's error. `logWritesSettled` resolves once the entries handed over so far are committed.
   */
  logRequest(entry: RequestLogInput, failed: (error: unknown) => void): void {
    const id = entry.id || this.newRequestLogId();
    commitSoonUnawaited(this.root, () => this.writeLogEntry(entry, id), failed);
  }

  /** Inside the transaction: the entry and its index rows. */
  private writeLogEntry(entry: RequestLogInput, id: string): void {
    // Numbered here, in the transaction, so write_seqs commit in their order.
    const seq = this.logWrites.next();
    // The entry is the log's from here on: numbered in place rather than copied whole (40 fields) per request.
    if (entry.id === id) {
      entry.write_seq = seq;
      void this.log.put(id, entry as RequestLogEntry);
    } else void this.log.put(id, { ...entry, id, write_seq: seq });
    this.logWrites.written(seq, id);
    if (entry.key_id) void this.logByKey.put([entry.key_id, id], null);
    if (entry.status >= 400) void this.logErrors.put(id, errorIndexValue(entry));
  }

  /**
   * Charges one request (or, with `countsRequest` false, a call made for one: a guardrail's classifier) to its
   * key's and team's current budget period (and the key's lifetime totals) in one transaction; the spend stage
   * awaits it before the answer ends, so the next request sees the spend.
   */
  async recordSpend(keyId: string, teamId: string | null, usd: number, countsRequest = true): Promise<SpendCharged> {
    const added = countsRequest ? 1 : 0;
    const cost = Number.isFinite(usd) && usd > 0 ? usd : 0;
    const charged: SpendCharged = { key: null, team: null };
    await commit(this.root, () => {
      const at = this.now();
      const key = this.keys.get(keyId);
      if (key) {
        const usage = this.usageAt(key, at);
        const spend = roundUsd(usage.spend + cost);
        this.keys.put(key.id, {
          ...key,
          ...usage,
          spend,
          requests: usage.requests + added,
          total_spend: roundUsd(key.total_spend + cost),
          total_requests: key.total_requests + added,
        });
        charged.key = { before: usage.spend, after: spend, budget: key.budget };
      }
      const team = (teamId ?? key?.team) ? this.teams.get((teamId ?? key?.team) as string) : undefined;
      if (team) {
        const usage = this.usageAt(team, at);
        const spend = roundUsd(usage.spend + cost);
        this.teams.put(team.id, { ...team, ...usage, spend, requests: usage.requests + added });
        charged.team = { before: usage.spend, after: spend, budget: team.budget };
      }
    });
    return charged;
  }

  /** A request-log id that sorts by time: zero-padded epoch ms, a dash, a sequence (as the audit log does). */
  newRequestLogId(): string {
    return newRequestId(this.now().getTime());
  }

  /**
   * Resolves once every log entry handed over so far is committed. An entry waits a few milliseconds for others to
   * share its commit (commitSoon), and its answer has ended by then: a client that looked its `x-request-id` up at
   * once was told there was no such request. Log reads call this first.
   */
  async logWritesSettled(): Promise<void> {
    commitWaiting(this.root);
    // With fsync the entries went to lmdb-js's own asynchronous batch.
    await this.root.committed;
  }

  /** One request's log entry by its id (the `x-request-id` the client got), or null. */
  requestLogEntry(id: string): RequestLogEntry | null {
    return this.log.get(id) ?? null;
  }

  /** Newest first; `before` pages on from an entry id (exclusive); filters as RequestLogQuery says. */
  requestLog(query: RequestLogQuery = {}): RequestLogEntry[] {
    return this.requestLogPage(query).data;
  }

  /**
   * Builds the error index for log entries written before it existed (a store from an earlier version), in
   * batches between which requests run; a marker records that it is complete. Resolves with the entries indexed.
   */
  async backfillErrorIndex(stopped: () => boolean = () => false): Promise<number> {
    if (this.logErrors.get(ERROR_INDEX_COMPLETE) !== undefined) return 0;
    let indexed = 0;
    let after: string | undefined;
    for (;;) {
      if (stopped()) return indexed;
      const batch: Array<[string, string]> = [];
      let last: string | undefined;
      let seen = 0;
      for (const { key, value } of this.log.getRange({ ...(after ? { start: after } : {}), limit: 5_000 })) {
        seen++;
        last = key;
        if (key !== after && value.status >= 400) batch.push([key, errorIndexValue(value)]);
      }
      if (batch.length > 0) {
        await this.root.transaction(() => {
          for (const [id, value] of batch) this.logErrors.put(id, value);
        });
      }
      indexed += batch.length;
      if (seen < 5_000 || last === undefined) break;
      after = last;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    await this.logErrors.put(ERROR_INDEX_COMPLETE, '');
    return indexed;
  }

  /** Entries written after a write_seq, in write order (see RequestLogWrites.page): what a log shipper polls. */
  requestLogWrittenAfter(query: WrittenAfterQuery): WrittenAfterPage {
    return this.logWrites.page(this.log, query);
  }

  /** One page of the request log with the cursor of the next (see queryRequestLog). */
  requestLogPage(query: RequestLogQuery = {}): RequestLogPage {
    return queryRequestLog({ log: this.log, byKey: this.logByKey, errors: this.logErrors }, query);
  }

  // ---- request-log retention ------------------------------------------------------------------------

  /** The pages the request log and its indexes hold, in bytes (what `settings.log_max_bytes` bounds). */
  requestLogBytes(): number {
    return pageBytes(this.log) + pageBytes(this.logByKey) + pageBytes(this.logErrors);
  }

  /**
   * Deletes request-log entries (and their per-key index rows) older than `olderThan`, then, with
   * `maxEntries`, the oldest beyond that many, then, with `maxBytes`, the oldest until `requestLogBytes` fits.
   * Log ids sort by time, so all three are deletions from the front of the log. Works in transactions of `batch` entries and yields to the event loop between them, so a large
   * backlog never holds requests up for long; `stopped` ends the work between batches (shutdown). Keys' and
   * teams' spend counters are separate records and are not touched. Resolves with the number deleted.
   */
  async trimRequestLog(options: { olderThan: Date | null; maxEntries: number | null; maxBytes?: number | null; batch?: number; stopped?: () => boolean }): Promise<number> {
    const batch = Math.max(1, options.batch ?? 1_000);
    const stopped = options.stopped ?? (() => false);
    let deleted = 0;
    if (options.olderThan) {
      // Every id of an entry written before the cut-off sorts below this one.
      const end = `${String(options.olderThan.getTime()).padStart(15, '0')}-`;
      deleted += await this.deleteOldestLogEntries(Infinity, end, batch, stopped);
    }
    if (options.maxEntries !== null && !stopped()) {
      const excess = recordCount(this.log) - options.maxEntries;
      if (excess > 0) deleted += await this.deleteOldestLogEntries(excess, null, batch, stopped);
    }
    const maxBytes = options.maxBytes ?? null;
    // By size: the oldest entries go, a share at a time as large as the excess is of the whole (entries differ in size:
    // kept bodies), until the log's pages fit.
    while (maxBytes !== null && !stopped()) {
      const bytes = this.requestLogBytes();
      const entries = recordCount(this.log);
      if (bytes <= maxBytes || entries === 0) break;
      const share = Math.max(1, Math.ceil((entries * (bytes - maxBytes)) / bytes));
      const removed = await this.deleteOldestLogEntries(share, null, batch, stopped);
      deleted += removed;
      if (removed === 0) break;
    }
    return deleted;
  }

  private async deleteOldestLogEntries(max: number, end: string | null, batch: number, stopped: () => boolean): Promise<number> {
    let deleted = 0;
    while (deleted < max && !stopped()) {
      const take = Math.min(batch, max - deleted);
      const doomed: Array<{ id: string; keyId: string | null; failed: boolean; seq: number | undefined }> = [];
      // Reading an entry decodes its logged bodies too: a batch also ends once it has read MAX_SCANNED_BODY_CHARS of
      // them (1,000 entries with 1 MiB bodies held the event loop for seconds).
      let read = 0;
      for (const { key, value } of this.log.getRange({ ...(end === null ? {} : { end }), limit: take })) {
        doomed.push({ id: key, keyId: value.key_id, failed: value.status >= 400, seq: value.write_seq });
        read += bodyChars(value);
        if (read >= MAX_SCANNED_BODY_CHARS) break;
      }
      if (doomed.length === 0) break;
      await this.root.transaction(() => {
        for (const { id, keyId, failed } of doomed) {
          this.log.remove(id);
          if (keyId) this.logByKey.remove([keyId, id]);
          if (failed) this.logErrors.remove(id);
        }
        this.logWrites.trimmed(doomed.flatMap(({ seq }) => (seq === undefined ? [] : [seq])));
      });
      deleted += doomed.length;
      if (doomed.length < take && read < MAX_SCANNED_BODY_CHARS) break;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return deleted;
  }

  // ---- internals ------------------------------------------------------------------------------------

  private usageAt(record: VirtualKeyRecord | TeamRecord, at: Date): PeriodUsage {
    if (periodEnded(record.period_resets_at, at)) return periodHolding(record.budget_period, at);
    return { spend: record.spend, requests: record.requests, period_start: record.period_start, period_resets_at: record.period_resets_at };
  }

  private keyView(record: VirtualKeyRecord): VirtualKeyView {
    const { key_hash: _hash, ...view } = record;
    return { ...view, last_used_at: view.last_used_at ?? null, ...this.currentUsage(record) };
  }

  private teamView(record: TeamRecord): TeamRecord {
    return { ...record, ...this.currentUsage(record) };
  }

  /**
   * Runs `work` in a write transaction. `work` may refuse (throw `Refused`) only before its first write:
   * lmdb commits whatever a throwing callback already wrote.
   */
  private async write<T>(work: () => T): Promise<T> {
    try {
      return await this.root.transaction(work);
    } catch (err) {
      if (err instanceof Refused) throw err.error;
      throw err;
    }
  }
}
