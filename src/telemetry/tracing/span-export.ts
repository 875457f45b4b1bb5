import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { TracingSettings } from '../../core/config.js';
import type { Log } from '../../log.js';
import type { Outbound } from '../../network/outbound-network.js';
import { EncodingSpanProcessor } from './encoding-processor.js';
import { OtlpSender } from './otlp-exporter.js';
import { JsonSpanBatch } from './otlp-json.js';
import { ProtoSpanBatch } from './otlp-proto.js';

/** Spans per export: with two exports in flight at most, about 1,000 spans wait at any time. */
export const MAX_BATCH_SPANS = 512;

/**
 * A tracer provider exporting over OTLP/HTTP (protobuf or JSON) in batches: each span is encoded as it ends, a
 * batch goes out every second or 512 spans at a time, and an export that fails, times out or finds the collector
 * behind loses that batch only. The provider is not registered globally: tollgate's spans never mix with an
 * embedder's own OpenTelemetry setup.
 */
export function createSpanExport(settings: TracingSettings & { endpoint: string }, version: string, log: Log, outbound: Outbound): SpanExport {
  const sender = new OtlpSender(settings.endpoint, settings.headers, log, outbound);
  const batch = settings.protocol === 'http/json' ? new JsonSpanBatch() : new ProtoSpanBatch();
  const processor = new EncodingSpanProcessor(batch, sender, { maxBatchSpans: MAX_BATCH_SPANS, delayMs: 1_000 });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    // A sampled incoming traceparent is followed; new traces are sampled at the configured ratio.
    sampler: new ParentBasedSampler({ root: rootSampler(settings.sampleRatio) }),
    spanProcessors: [processor],
  });
  return { provider, processor };
}

/** The sampler of new traces: the ratio's, or the constant ones at 1 and 0 (no hashing of the trace id). */
function rootSampler(ratio: number): Sampler {
  if (ratio >= 1) return new AlwaysOnSampler();
  if (ratio <= 0) return new AlwaysOffSampler();
  return new TraceIdRatioBasedSampler(ratio);
}

/** The provider (request spans) and its processor, which also takes the request's child spans directly. */
export interface SpanExport {
  provider: NodeTracerProvider;
  processor: EncodingSpanProcessor;
}
