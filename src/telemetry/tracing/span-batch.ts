import type { AttributeList, SpanRecord } from './span-record.js';

/** Who made the spans: the resource's attributes (service name and version, the SDK's) and the instrumentation scope. */
export interface SpanSource {
  /** The resource's attributes (service name and version, the SDK's), as a span's are given. */
  resource: AttributeList;
  scope: { name: string; version: string };
}

/**
 * Finished spans being collected for one export, encoded as they are added, all of one resource and scope (an
 * export's settings fix both; other settings make another batch).
 */
export interface SpanBatch {
  readonly contentType: string;
  /** Spans added since the last `take`. */
  readonly count: number;
  /** A finished span, encoded now: `span` is reused by the caller and not kept. */
  add(span: SpanRecord): void;
  /** The export body for every span added; the batch starts empty again. */
  take(): string | Buffer;
}
