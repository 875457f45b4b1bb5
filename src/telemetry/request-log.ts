import type { EventBus } from '../bus/bus.js';
import type { GatewayEvents, RequestSummary } from '../core/events.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import type { RequestLogEntry } from '../governance/types.js';
import type { Log } from '../log.js';

/** How long `flush` waits for writes in flight at shutdown. */
const SETTLE_WAIT_MS = 2_000;

function entryOf(event: RequestSummary, cancelled: boolean, error: { type: string; code: string | null } | null): RequestLogEntry {
  return {
    id: event.requestId,
    at: new Date().toISOString(),
    key_id: event.keyId,
    team_id: event.teamId,
    model: event.model,
    provider: event.provider,
    upstream_model: event.upstreamModel,
    status: event.status,
    stream: event.stream,
    cancelled,
    prompt_tokens: event.usage?.input_tokens ?? 0,
    completion_tokens: event.usage?.output_tokens ?? 0,
    cost_usd: event.costUsd ?? 0,
    priced: event.priced,
    duration_ms: Math.round(event.durationMs),
    ...(event.route !== null ? { route: event.route } : {}),
    ...(error ? { error_type: error.type, error_code: error.code } : {}),
  };
}

/**
 * The request log as a bus subscriber: every request that reached the pipeline ends in exactly one terminal event
 * (`request.completed` or `request.failed`, refusals by auth, rate limit and budget included), and each becomes one
 * entry. Writes are plain lmdb puts, batched by lmdb within an event-loop turn, never awaited by a request; a
 * failed write is logged, and `flush` waits for those in flight at shutdown so nothing accepted is lost.
 */
export class RequestLogWriter {
  private readonly writing = new Set<Promise<void>>();
  private readonly stops: Array<() => void>;

  constructor(
    bus: EventBus,
    private readonly governance: GovernanceStore,
    private readonly log: Log,
  ) {
    this.stops = [
      bus.on('request.completed', (event: GatewayEvents['request.completed']) => this.write(entryOf(event, event.cancelled, null))),
      bus.on('request.failed', (event: GatewayEvents['request.failed']) => this.write(entryOf(event, false, { type: event.type, code: event.code }))),
    ];
  }

  private write(entry: RequestLogEntry): void {
    const done = this.governance
      .recordRequest(entry)
      .catch((err: unknown) => this.log.error({ err, requestId: entry.id }, 'could not write the request log'))
      .finally(() => this.writing.delete(done));
    this.writing.add(done);
  }

  /** Resolves when every entry handed over so far is written (or the wait is over). */
  async flush(): Promise<void> {
    const deadline = Date.now() + SETTLE_WAIT_MS;
    while (this.writing.size > 0 && Date.now() < deadline) await Promise.allSettled([...this.writing]);
  }

  stop(): void {
    for (const stop of this.stops) stop();
  }
}
