import { promisify } from 'node:util';
import { constants, gzip } from 'node:zlib';
import type { Log } from '../../log.js';
import type { Outbound } from '../../network/outbound-network.js';

/** Exports in flight at most; a batch beyond that is dropped (the collector is behind or down). */
const MAX_IN_FLIGHT = 2;
/** A warning about dropped or failed exports at most this often. */
const WARN_EVERY_MS = 60_000;
const gzipped = promisify(gzip);
/**
 * The fastest level: tollgate's spans repeat their names, models and ids' framing, so it already takes most of the
 * bytes away, at a fraction of the default level's CPU (bench/RESULTS.md, issue 16).
 */
const GZIP_OPTIONS = { level: constants.Z_BEST_SPEED };

/**
 * Posts encoded span batches to an OTLP/HTTP collector over the gateway's outbound dispatcher (keep-alive pools,
 * and the proxy and CAs of settings.network, like every outbound call). An export that fails, times out or finds
 * MAX_IN_FLIGHT exports still running loses its batch and says so in the log (at most once a minute); nothing is
 * retried, so a collector that is down costs the gateway one failed POST per batch and never a backlog.
 */
export class OtlpSender {
  private readonly origin: string;
  private readonly path: string;
  private inFlight = 0;
  private lost = 0;
  private warnedAt = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();
  /** The exports under way, to be cut short when the gateway stops (a collector that never answers holds none of it). */
  private readonly underWay = new Set<AbortController>();

  constructor(
    endpoint: string,
    private readonly headers: Readonly<Record<string, string>>,
    private readonly log: Log,
    private readonly outbound: Outbound,
    /** Each export's body gzipped (Content-Encoding: gzip), off the event loop in libuv's thread pool. */
    private readonly compress = false,
    private readonly timeoutMs = 10_000,
  ) {
    const url = new URL(endpoint);
    this.origin = url.origin;
    this.path = `${url.pathname}${url.search}`;
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
    const controller = new AbortController();
    this.underWay.add(controller);
    try {
      const sent = this.compress ? await gzipped(body, GZIP_OPTIONS) : body;
      const response = await this.outbound.dispatcher.request({
        origin: this.origin,
        method: 'POST',
        path: this.path,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        headers: this.compress ? { ...this.headers, 'content-type': contentType, 'content-encoding': 'gzip' } : { ...this.headers, 'content-type': contentType },
        body: sent,
        signal: AbortSignal.any([controller.signal, AbortSignal.timeout(this.timeoutMs)]),
      });
      // The answer (a partial-success report at most) is read and discarded so the connection is reused.
      await response.body.dump();
      if (response.statusCode < 200 || response.statusCode >= 300) throw new Error(`collector answered ${response.statusCode}`);
    } finally {
      this.underWay.delete(controller);
    }
  }

  /** Cuts the exports still under way short (their batches are lost and counted): the gateway is stopping. */
  abort(): void {
    for (const controller of this.underWay) controller.abort(new Error('the gateway stopped before the collector answered'));
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
    // The dispatcher is the gateway's, closed with it; its idle connection to the collector times out by itself.
    this.stopped = true;
  }
}
