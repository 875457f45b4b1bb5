import type { EventBus } from '../bus/bus.js';
import { answeredFromCache, type GatewayEvents, type RequestSummary } from '../core/events.js';
import {
  addCounts,
  bucketStart,
  emptyCounts,
  NO_GROUP,
  roundSpend,
  USAGE_DIMENSIONS,
  USAGE_INTERVALS,
  type rollupKeys,
  type UsageCounts,
  type UsageDimension,
  type UsageInterval,
  type UsageQuery,
  type UsageRollups,
  type UsageRow,
} from '../governance/usage-rollups.js';
import type { Log } from '../log.js';

/** How often pending deltas are written (one transaction for all of them). */
const FLUSH_EVERY_MS = 1_000;

type RollupKey = ReturnType<typeof rollupKeys>[number];

/** Every dimension under every interval: the rollups one request adds to. */
const SLOTS: ReadonlyArray<{ dimension: UsageDimension; interval: UsageInterval }> = USAGE_INTERVALS.flatMap((interval) =>
  USAGE_DIMENSIONS.map((dimension) => ({ dimension, interval })),
);

/**
 * Deltas not written yet, per slot (as SLOTS orders them), by bucket start, then by group. Looking a request's ten
 * rows up this way builds no key: a string key per row was most of what recording a request allocated.
 */
type Pending = Array<Map<number, Map<string, UsageCounts>>>;

function emptyPending(): Pending {
  return SLOTS.map(() => new Map());
}

/**
 * Keeps the usage rollups as requests finish: each terminal event adds to in-memory deltas (a few map updates),
 * written once a second in one transaction and at shutdown. Queries add the deltas not written yet, so
 * `GET /api/usage` is current to the last finished request without a write per request.
 */
export class UsageRollupWriter {
  private pending: Pending = emptyPending();
  private pendingRows = 0;
  private readonly stops: Array<() => void>;
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();
  /** Deltas taken for a write that has not finished yet (see flush), with their batch numbers. */
  private readonly inFlight: Array<{ batch: number; pending: Pending }> = [];
  /** The number of the last batch handed to the store (numbers go on from the store's across restarts). */
  private batches: number;

  constructor(
    bus: EventBus,
    private readonly rollups: UsageRollups,
    private readonly log: Log,
    /** The clock a request's arrival is read on (tests set it to count requests in chosen hours). */
    private readonly clock: () => number = Date.now,
  ) {
    this.stops = [
      bus.on('request.completed', (event: GatewayEvents['request.completed']) => this.record(event)),
      bus.on('request.failed', (event: GatewayEvents['request.failed']) => this.record(event)),
    ];
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
    this.batches = rollups.lastBatch();
  }

  private record(event: RequestSummary): void {
    // Bucketed by arrival, as the request log's time filters select (a stream that crosses midnight counts on the day
    // it started in both).
    const at = this.clock() - (Number.isFinite(event.durationMs) && event.durationMs > 0 ? event.durationMs : 0);
    // In USAGE_DIMENSIONS' order; the slots are taken in SLOTS' order (each interval, then each dimension).
    const groups = [event.keyId ?? NO_GROUP, event.teamId ?? NO_GROUP, modelGroup(event), event.provider ?? NO_GROUP, event.route ?? NO_GROUP];
    // An answer from the response cache counts as a request with the tokens charged for it: none (as the metrics).
    const usage = answeredFromCache(event) ? null : event.usage;
    const delta: UsageCounts = {
      requests: 1,
      errors: event.status >= 400 && event.status !== 499 ? 1 : 0,
      spend_usd: event.costUsd ?? 0,
      input_tokens: usage?.input_tokens ?? 0,
      output_tokens: usage?.output_tokens ?? 0,
    };
    let slot = 0;
    for (const interval of USAGE_INTERVALS) {
      const start = bucketStart(at, interval);
      for (const group of groups) {
        const byStart = this.pending[slot++] as Map<number, Map<string, UsageCounts>>;
        let byGroup = byStart.get(start);
        if (!byGroup) byStart.set(start, (byGroup = new Map()));
        let counts = byGroup.get(group);
        if (!counts) {
          byGroup.set(group, (counts = emptyCounts()));
          this.pendingRows++;
        }
        addCounts(counts, delta);
      }
    }
  }

  /** Writes the pending deltas; resolves when they (and any earlier flush) are stored. */
  flush(): Promise<void> {
    if (this.pendingRows === 0) return this.writing;
    const batch = new Map<string, { key: RollupKey; counts: UsageCounts }>();
    this.pending.forEach((byStart, slot) => {
      const { dimension, interval } = SLOTS[slot] as (typeof SLOTS)[number];
      for (const [start, byGroup] of byStart) {
        for (const [group, counts] of byGroup) batch.set(`${dimension}\0${interval}\0${start}\0${group}`, { key: [dimension, interval, start, group], counts });
      }
    });
    // Until the batch is stored, queries add it in from here (else a read between the two missed its requests), when
    // their read snapshot does not hold it yet: lmdb-js commits on its write thread and reads take a fresh snapshot each
    // event-loop turn, so a query may see the batch stored before the write resolves (and counted it twice).
    const writing = { batch: ++this.batches, pending: this.pending };
    this.inFlight.push(writing);
    this.pending = emptyPending();
    this.pendingRows = 0;
    this.writing = this.writing
      .then(() => this.rollups.add(batch, writing.batch))
      .catch((err: unknown) => this.log.error({ err, rows: batch.size }, 'could not write usage rollups'))
      .finally(() => this.inFlight.splice(this.inFlight.indexOf(writing), 1));
    return this.writing;
  }

  /** The deltas a read snapshot holding batches up to `stored` lacks: those being written after it, and the pending. */
  private unwrittenAfter(stored: number): Pending[] {
    return [...this.inFlight.filter(({ batch }) => batch > stored).map(({ pending }) => pending), this.pending];
  }

  /**
   * Visits the stored rows, then the deltas their read snapshot does not hold (a (start, group) may come twice:
   * visitors add), taken when the scan starts, as its read snapshot is.
   */
  scan(query: UsageQuery, visit: (start: number, group: string, counts: UsageCounts) => void): Promise<void> {
    const from = bucketStart(query.from, query.interval);
    const slot = SLOTS.findIndex(({ dimension, interval }) => dimension === query.group_by && interval === query.interval);
    const unwritten: Array<[number, string, UsageCounts]> = [];
    const stored = this.rollups.scan(query, visit, (batch) => {
      for (const pending of this.unwrittenAfter(batch)) {
        for (const [start, byGroup] of pending[slot] ?? []) {
          if (start >= query.to || start < from) continue;
          for (const [group, counts] of byGroup) unwritten.push([start, group, { ...counts }]);
        }
      }
    });
    return stored.then(() => {
      for (const [start, group, counts] of unwritten) visit(start, group, counts);
    });
  }

  /** The stored rows with the deltas they do not hold added in. */
  query(query: UsageQuery): UsageRow[] {
    const { rows, batch } = this.rollups.query(query);
    const from = bucketStart(query.from, query.interval);
    const byKey = new Map(rows.map((row) => [`${row.start}\0${row.group}`, row]));
    const slot = SLOTS.findIndex(({ dimension, interval }) => dimension === query.group_by && interval === query.interval);
    for (const pending of this.unwrittenAfter(batch)) {
      for (const [start, byGroup] of pending[slot] ?? []) {
        if (start >= query.to || start < from) continue;
        for (const [group, counts] of byGroup) {
          const id = `${new Date(start).toISOString()}\0${group}`;
          const row = byKey.get(id);
          if (row) addCounts(row, counts);
          else {
            const added: UsageRow = { start: new Date(start).toISOString(), group, ...emptyCounts() };
            addCounts(added, counts);
            byKey.set(id, added);
            rows.push(added);
          }
        }
      }
    }
    for (const row of rows) row.spend_usd = roundSpend(row.spend_usd);
    return rows.sort((a, b) => (a.start === b.start ? (a.group < b.group ? -1 : 1) : a.start < b.start ? -1 : 1));
  }

  async close(): Promise<void> {
    for (const stop of this.stops) stop();
    clearInterval(this.timer);
    await this.flush();
  }
}

/**
 * A request's model group: the provider and model that answered it (`openai/gpt-4o`, so a fallback's model is told
 * apart from the primary's of the same name), else the route it went through, else none. A refused request's model
 * name is the client's to invent and would grow the rollups without bound, as it would a metric label.
 */
function modelGroup(event: RequestSummary): string {
  // Only a model that answered: an upstream's refusal (404 for a name the client made up) names no real model. A
  // stream its client left (499) after the answer began was answered by that model, and is charged as such.
  if (event.provider !== null && event.upstreamModel !== null && (event.status < 400 || answeredBeforeLeft(event))) return answeredModel(event.provider, event.upstreamModel);
  return event.route ?? NO_GROUP;
}

/** The last `provider/model` made, reused while requests keep naming the same one (its hash is then kept too). */
let lastAnswered = { provider: '', model: '', group: '/' };

function answeredModel(provider: string, model: string): string {
  if (provider !== lastAnswered.provider || model !== lastAnswered.model) lastAnswered = { provider, model, group: `${provider}/${model}` };
  return lastAnswered.group;
}

/** A request whose client left after its answer began: the upstream had answered it (a cache hit names no provider). */
function answeredBeforeLeft(event: RequestSummary): boolean {
  return event.status === 499 && event.firstTokenMs !== null && event.cache?.startsWith('hit') !== true;
}
