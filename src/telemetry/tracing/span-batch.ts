import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** Finished spans being collected for one export, encoded as they are added. */
export interface SpanBatch {
  readonly contentType: string;
  /** Spans added since the last `take`. */
  readonly count: number;
  add(span: ReadableSpan): void;
  /** The export body for every span added; the batch starts empty again. */
  take(): string | Buffer;
}
