import type { EventBus } from '../bus/bus.js';
import type { GatewayEvents, RequestSummary } from '../core/events.js';
import { addCounts, bucketStart, emptyCounts, NO_GROUP, rollupKeys, type UsageCounts, type UsageQuery, type UsageRollups, type UsageRow, type UsageSample } from '../governance/usage-rollups.js';
import type { Log } from '../log.js';

/** How often pending deltas are written (one transaction for all of them). */
const FLUSH_EVERY_MS = 1_000;

type RollupKey = ReturnType<typeof rollupKeys>[number];

/**
 * Keeps the usage rollups as requests finish: each terminal event adds to in-memory deltas (a few map updates),
 * written once a second in one transaction and at shutdown. Queries add the deltas not written yet, so
 * `GET /api/usage` is current to the last finished request without a write per request.
 */
export class UsageRollupWriter {
  private pending = new Map<string, { key: RollupKey; counts: UsageCounts }>();
  private readonly stops: Array<() => void>;
  private readonly timer: NodeJS.Timeout;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    bus: EventBus,
    private readonly rollups: UsageRollups,
    private readonly log: Log,
  ) {
    this.stops = [
      bus.on('request.completed', (event: GatewayEvents['request.completed']) => this.record(event)),
      bus.on('request.failed', (event: GatewayEvents['request.failed']) => this.record(event)),
    ];
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  private record(event: RequestSummary): void {
    const sample: UsageSample = {
      at: Date.now(),
      groups: {
        key: event.keyId ?? NO_GROUP,
        team: event.teamId ?? NO_GROUP,
        model: event.upstreamModel ?? event.model,
        provider: event.provider ?? NO_GROUP,
        route: event.route ?? NO_GROUP,
      },
      requests: 1,
      errors: event.status >= 400 && event.status !== 499 ? 1 : 0,
      spend_usd: event.costUsd ?? 0,
      input_tokens: event.usage?.input_tokens ?? 0,
      output_tokens: event.usage?.output_tokens ?? 0,
    };
    for (const key of rollupKeys(sample)) {
      const id = `${key[0]}\0${key[1]}\0${key[2]}\0${key[3]}`;
      let entry = this.pending.get(id);
      if (!entry) this.pending.set(id, (entry = { key, counts: emptyCounts() }));
      addCounts(entry.counts, sample);
    }
  }

  /** Writes the pending deltas; resolves when they (and any earlier flush) are stored. */
  flush(): Promise<void> {
    const batch = this.pending;
    if (batch.size === 0) return this.writing;
    this.pending = new Map();
    this.writing = this.writing
      .then(() => this.rollups.add(batch))
      .catch((err: unknown) => this.log.error({ err, rows: batch.size }, 'could not write usage rollups'));
    return this.writing;
  }

  /** The stored rows with the deltas not yet written added in. */
  query(query: UsageQuery): UsageRow[] {
    const rows = this.rollups.query(query);
    const from = bucketStart(query.from, query.interval);
    const byKey = new Map(rows.map((row) => [`${row.start}\0${row.group}`, row]));
    for (const { key, counts } of this.pending.values()) {
      const [dimension, interval, start, group] = key;
      if (dimension !== query.group_by || interval !== query.interval || start >= query.to || start < from) continue;
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
    return rows.sort((a, b) => (a.start === b.start ? (a.group < b.group ? -1 : 1) : a.start < b.start ? -1 : 1));
  }

  async close(): Promise<void> {
    for (const stop of this.stops) stop();
    clearInterval(this.timer);
    await this.flush();
  }
}
