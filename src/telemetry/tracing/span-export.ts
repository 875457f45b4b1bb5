import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { TracingSettings } from '../../core/config.js';
import type { Log } from '../../log.js';
import { OtlpExporter } from './otlp-exporter.js';

/** Spans waiting for export at most; past it new spans are dropped (a collector that is down costs only these). */
export const MAX_QUEUED_SPANS = 4_096;

/**
 * A tracer provider exporting over OTLP/HTTP (protobuf or JSON) in batches: spans queue in memory (bounded), go out every
 * second or 512 at a time, and an export that fails or times out loses that batch only. The provider is not
 * registered globally: tollgate's spans never mix with an embedder's own OpenTelemetry setup.
 */
export function createSpanExport(settings: TracingSettings & { endpoint: string }, version: string, log: Log): SpanExport {
  const exporter = new OtlpExporter(settings.endpoint, settings.protocol, settings.headers, log);
  const processor = new BatchSpanProcessor(exporter, { maxQueueSize: MAX_QUEUED_SPANS, maxExportBatchSize: 512, scheduledDelayMillis: 1_000, exportTimeoutMillis: 10_000 });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    // A sampled incoming traceparent is followed; new traces are sampled at the configured ratio.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [processor],
  });
  return { provider, processor };
}

/** The provider (request spans) and its batch processor, which also takes the request's child spans directly. */
export interface SpanExport {
  provider: NodeTracerProvider;
  processor: BatchSpanProcessor;
}
