import { Pool } from 'undici';
import type { Log } from '../../log.js';

/** Exports in flight at most; a batch beyond that is dropped (the collector is behind or down). */
const MAX_IN_FLIGHT = 2;
/** A warning about dropped or failed exports at most this often. */
const WARN_EVERY_MS = 60_000;

/**
 * Posts encoded span batches to an OTLP/HTTP collector over a small keep-alive pool. An export that fails, times
 * out or finds MAX_IN_FLIGHT exports still running loses its batch and says so in the log (at most once a minute);
 * nothing is retried, so a collector that is down costs the gateway one failed POST per batch and never a backlog.
 */
export class OtlpSender {
  private readonly pool: Pool;
  private readonly path: string;
  private inFlight = 0;
  private lost = 0;
  private warnedAt = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();

  constructor(
    endpoint: string,
    private readonly headers: Readonly<Record<string, string>>,
    private readonly log: Log,
    private readonly timeoutMs = 10_000,
  ) {
    const url = new URL(endpoint);
    this.path = `${url.pathname}${url.search}`;
    this.pool = new Pool(url.origin, { connections: MAX_IN_FLIGHT, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  /** Whether another export can start now (else the caller drops its batch before encoding the envelope). */
  get ready(): boolean {
    return !this.stopped && this.inFlight < MAX_IN_FLIGHT;
  }

  send(body: string | Buffer, contentType: string, spans: number): void {
    if (!this.ready) {
      this.dropped(spans, this.stopped ? 'exporter stopped' : 'collector behind');
      return;
    }
    this.inFlight++;
    const sending = this.post(body, contentType).catch((err: unknown) => this.dropped(spans, err instanceof Error ? err.message : String(err)));
    const tracked = sending.finally(() => {
      this.inFlight--;
      this.running.delete(tracked);
    });
    this.running.add(tracked);
  }

  private async post(body: string | Buffer, contentType: string): Promise<void> {
    const response = await this.pool.request({
      method: 'POST',
      path: this.path,
      headers: { ...this.headers, 'content-type': contentType },
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    // The answer (a partial-success report at most) is read and discarded so the connection is reused.
    await response.body.dump();
    if (response.statusCode < 200 || response.statusCode >= 300) throw new Error(`collector answered ${response.statusCode}`);
  }

  dropped(count: number, reason: string): void {
    this.lost += count;
    const now = Date.now();
    if (now - this.warnedAt < WARN_EVERY_MS) return;
    this.warnedAt = now;
    this.log.warn({ spansLost: this.lost, reason }, 'tracing: spans could not be exported');
    this.lost = 0;
  }

  /** Resolves when the exports under way have ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }

  async shutdown(): Promise<void> {
    await this.settled();
    this.stopped = true;
    await this.pool.close().catch(() => undefined);
  }
}
