import type { EventBus } from '../bus/bus.js';
import type { GatewayEvents, RequestSummary } from '../core/events.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import type { RequestAttempt, RequestLogEntry } from '../governance/types.js';
import type { Log } from '../log.js';
import { isoTime } from '../core/iso-time.js';
import { redactSecrets } from '../core/redact-secrets.js';

/** Attempts kept per request (a route allows at most 20). */
const MAX_ATTEMPTS_KEPT = 20;

type Failure = { type: string; code: string | null; message: string };

/**
 * The log entry of a finished request. The optional fields are set where they belong in the field order (which is
 * the order /api/logs shows and the stored record's shape) by assignment: a spread of a small object for each cost
 * about as much as the rest of the entry (bench/request-log.ts).
 */
function entryOf(event: RequestSummary, cancelled: boolean, error: Failure | null, attempts: RequestAttempt[]): RequestLogEntry {
  const usage = event.usage;
  const entry: RequestLogEntry = {
    id: event.requestId,
    at: isoTime(Date.now()),
    key_id: event.keyId,
    team_id: event.teamId,
    model: event.model,
    provider: event.provider,
    upstream_model: event.upstreamModel,
    status: event.status,
    stream: event.stream,
    cancelled,
    prompt_tokens: usage?.input_tokens ?? 0,
    completion_tokens: usage?.output_tokens ?? 0,
    cost_usd: event.costUsd ?? 0,
    priced: event.priced,
    duration_ms: Math.round(event.durationMs),
  };
  if (event.route !== null) entry.route = event.route;
  if (error) {
    entry.error_type = error.type;
    entry.error_code = error.code;
    entry.error_message = error.message.slice(0, 2_000);
  }
  entry.dialect = event.dialect;
  entry.path = event.path;
  entry.operation = event.operation;
  entry.attempts = attempts;
  entry.fallback = event.fallback;
  entry.upstream_ms = Math.round(event.upstreamMs);
  entry.first_token_ms = event.firstTokenMs === null ? null : Math.round(event.firstTokenMs);
  entry.overhead_ms = Math.round(Math.max(0, event.durationMs - event.upstreamMs) * 100) / 100;
  entry.cached_tokens = usage?.cache_read_tokens ?? 0;
  entry.cache_write_tokens = usage?.cache_write_tokens ?? 0;
  entry.reasoning_tokens = usage?.output_reasoning_tokens ?? 0;
  entry.estimated = event.estimated;
  if (event.cache !== null) entry.cache = event.cache;
  if (event.guardrails !== null) entry.guardrails = event.guardrails;
  entry.user = event.user;
  entry.metadata = event.metadata;
  if (event.bodies) {
    entry.request_body = event.bodies.request;
    entry.response_body = event.bodies.response;
  }
  return entry;
}

/**
 * The request log as a bus subscriber: every request that reached the pipeline ends in exactly one terminal event
 * (`request.completed` or `request.failed`, refusals by auth, rate limit and budget included), and each becomes one
 * entry. An entry commits with the other background writes of the next few milliseconds (`GovernanceStore.logRequest`,
 * `commitSoonUnawaited` in store/commit.ts), never awaited by a request; a failed write is logged, and `flush` commits
 * those still waiting at shutdown so nothing accepted is lost.
 */
export class RequestLogWriter {
  private readonly stops: Array<() => void>;
  /** Attempts of requests still running, by request id (the terminal event takes them). */
  private readonly attempts = new Map<string, RequestAttempt[]>();

  constructor(
    bus: EventBus,
    private readonly governance: GovernanceStore,
    private readonly log: Log,
  ) {
    this.stops = [
      bus.on('provider.attempted', (event: GatewayEvents['provider.attempted']) => this.attempted(event)),
      bus.on('request.completed', (event: GatewayEvents['request.completed']) => this.write(entryOf(event, event.cancelled, null, this.takeAttempts(event.requestId)))),
      bus.on('request.failed', (event: GatewayEvents['request.failed']) =>
        this.write(entryOf(event, event.cancelled, { type: event.type, code: event.code, message: event.message }, this.takeAttempts(event.requestId))),
      ),
    ];
  }

  private attempted(event: GatewayEvents['provider.attempted']): void {
    let list = this.attempts.get(event.requestId);
    if (!list) this.attempts.set(event.requestId, (list = []));
    if (list.length >= MAX_ATTEMPTS_KEPT) return;
    list.push({
      provider: event.provider,
      // A client may have pasted a key into the model name (`openai/<key>`): see core/redact-secrets.ts.
      model: redactSecrets(event.model),
      status: event.status,
      ok: event.ok,
      duration_ms: Math.round(event.durationMs),
      error_code: event.errorCode ?? null,
    });
  }

  private takeAttempts(requestId: string): RequestAttempt[] {
    const list = this.attempts.get(requestId) ?? [];
    this.attempts.delete(requestId);
    return list;
  }

  private write(entry: RequestLogEntry): void {
    // Handed over without a promise per entry (one with its catch and finally was a fifth of what the log cost a
    // request in process, bench/request-log.ts); a failed write is logged here.
    this.governance.logRequest(entry, (err: unknown) => this.log.error({ err, requestId: entry.id }, 'could not write the request log'));
  }

  /** Resolves when every entry handed over so far is written. */
  async flush(): Promise<void> {
    await this.governance.logWritesSettled();
  }

  stop(): void {
    for (const stop of this.stops) stop();
  }
}
