import type { OtlpSender } from './otlp-exporter.js';
import type { SpanBatch } from './span-batch.js';
import type { SpanRecord } from './span-record.js';

export interface EncodingProcessorOptions {
  /** Spans per export (an export starts as soon as this many are waiting). */
  maxBatchSpans: number;
  /** An export starts this long after the first span of a batch at the latest. */
  delayMs: number;
}

/**
 * A batch span processor that encodes each span the moment it ends, into the batch's OTLP body, instead of
 * holding span objects until the export: at 100% sampling a request's spans would otherwise outlive a young
 * generation collection and be promoted, which cost more than building them. The batch is bounded (it goes
 * out at `maxBatchSpans`), and a batch that cannot be sent (too many exports in flight) is dropped, counted and
 * logged: a collector that is down never grows memory. (It does for tollgate's span records what the SDK's
 * BatchSpanProcessor does for span objects: a bounded batch, a delay and dropping when behind.)
 */
export class EncodingSpanProcessor {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly batch: SpanBatch,
    private readonly sender: OtlpSender,
    private readonly options: EncodingProcessorOptions,
  ) {}

  /** A finished span of a sampled request: encoded now, `span` is not kept. */
  onEnd(span: SpanRecord): void {
    if (this.stopped) return;
    this.batch.add(span);
    this.added();
  }

  /** Starts the export when the batch is full, else makes sure it goes out within the delay. */
  private added(): void {
    if (this.batch.count >= this.options.maxBatchSpans) this.flush();
    else if (!this.timer) {
      this.timer = setTimeout(() => this.flush(), this.options.delayMs);
      this.timer.unref();
    }
  }

  /** Sends what the batch holds now (or drops it, when the collector is behind). */
  private flush(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const count = this.batch.count;
    if (count === 0) return;
    if (!this.sender.ready) {
      this.batch.take();
      this.sender.dropped(count, 'collector behind');
      return;
    }
    this.sender.send(this.batch.take(), this.batch.contentType, count);
  }

  async forceFlush(): Promise<void> {
    this.flush();
    await this.sender.settled();
  }

  /** Gives up the exports still under way (shutdown waited long enough for a collector that does not answer). */
  abandon(): void {
    this.stopped = true;
    this.sender.abort();
  }

  async shutdown(): Promise<void> {
    if (this.stopped) return;
    this.flush();
    this.stopped = true;
    await this.sender.shutdown();
  }
}
