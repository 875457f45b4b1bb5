import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { Pool } from 'undici';
import type { Log } from '../../log.js';
import { exportRequestJson } from './otlp-json.js';
import { exportRequestProto } from './otlp-proto.js';

/** Exports in flight at most; a batch beyond that is dropped (the collector is behind or down). */
const MAX_IN_FLIGHT = 2;
/** A warning about dropped or failed exports at most this often. */
const WARN_EVERY_MS = 60_000;

/**
 * Sends span batches to an OTLP/HTTP collector, protobuf or JSON (`POST <endpoint>`), over a small keep-alive pool. An
 * export that fails, times out or finds MAX_IN_FLIGHT exports still running loses its batch and says so in the
 * log (at most once a minute); nothing is retried, so a collector that is down costs the gateway one failed POST
 * per batch and never a growing backlog.
 */
export class OtlpExporter implements SpanExporter {
  private readonly pool: Pool;
  private readonly path: string;
  private inFlight = 0;
  private lost = 0;
  private warnedAt = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();

  constructor(
    endpoint: string,
    private readonly protocol: 'http/protobuf' | 'http/json',
    private readonly headers: Readonly<Record<string, string>>,
    private readonly log: Log,
    private readonly timeoutMs = 10_000,
  ) {
    const url = new URL(endpoint);
    this.path = `${url.pathname}${url.search}`;
    this.pool = new Pool(url.origin, { connections: MAX_IN_FLIGHT, keepAliveTimeout: 30_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    if (this.stopped || this.inFlight >= MAX_IN_FLIGHT) {
      this.dropped(spans.length, this.stopped ? 'exporter stopped' : 'collector behind');
      done({ code: ExportResultCode.FAILED });
      return;
    }
    this.inFlight++;
    const body = this.protocol === 'http/json' ? exportRequestJson(spans) : exportRequestProto(spans);
    const sending = this.send(body).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (err: unknown) => {
        this.dropped(spans.length, err instanceof Error ? err.message : String(err));
        done({ code: ExportResultCode.FAILED, error: err instanceof Error ? err : new Error(String(err)) });
      },
    );
    const tracked = sending.finally(() => {
      this.inFlight--;
      this.running.delete(tracked);
    });
    this.running.add(tracked);
  }

  private async send(body: string | Buffer): Promise<void> {
    const response = await this.pool.request({
      method: 'POST',
      path: this.path,
      headers: { ...this.headers, 'content-type': this.protocol === 'http/json' ? 'application/json' : 'application/x-protobuf' },
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    // The answer (a partial-success report at most) is read and discarded so the connection is reused.
    await response.body.dump();
    if (response.statusCode < 200 || response.statusCode >= 300) throw new Error(`collector answered ${response.statusCode}`);
  }

  private dropped(count: number, reason: string): void {
    this.lost += count;
    const now = Date.now();
    if (now - this.warnedAt < WARN_EVERY_MS) return;
    this.warnedAt = now;
    this.log.warn({ spansLost: this.lost, reason }, 'tracing: spans could not be exported');
    this.lost = 0;
  }

  async forceFlush(): Promise<void> {
    await Promise.allSettled([...this.running]);
  }

  async shutdown(): Promise<void> {
    this.stopped = true;
    await this.forceFlush();
    await this.pool.close().catch(() => undefined);
  }
}
