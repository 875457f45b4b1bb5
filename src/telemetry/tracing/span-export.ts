import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-node';
import type { TracingSettings } from '../../core/config.js';
import type { Log } from '../../log.js';
import type { Outbound } from '../../network/outbound-network.js';
import { EncodingSpanProcessor } from './encoding-processor.js';
import { OtlpSender } from './otlp-exporter.js';
import { JsonSpanBatch } from './otlp-json.js';
import { ProtoSpanBatch } from './otlp-proto.js';

/**
 * Spans per export (about 430 KB of protobuf for tollgate's spans): with two exports in flight at most, about
 * 6,000 spans wait at any time. An export has a fixed cost (a POST, its answer, waking up for it) of a few hundred
 * µs here whatever its size: at the SDK's default of 512 spans, that was about 5 µs per traced request, at 2,048
 * about 1.5 (bench/RESULTS.md, issue 16).
 */
export const MAX_BATCH_SPANS = 2048;

/**
 * An export over OTLP/HTTP (protobuf or JSON) in batches: each span is encoded as it ends, a batch goes out every
 * second or 2,048 spans at a time, and an export that fails, times out or finds the collector behind loses that
 * batch only. Nothing is registered globally: tollgate's spans never mix with an embedder's own OpenTelemetry
 * setup. The resource is the SDK's default (telemetry.sdk.*) with OTEL_RESOURCE_ATTRIBUTES and the service's name and
 * version.
 */
export function createSpanExport(settings: TracingSettings & { endpoint: string }, version: string, log: Log, outbound: Outbound): SpanExport {
  const sender = new OtlpSender(settings.endpoint, settings.headers, log, outbound, settings.compression === 'gzip');
  const resource = defaultResource().merge(resourceFromAttributes({ ...settings.resourceAttributes, 'service.name': settings.serviceName, 'service.version': version }));
  const source = { resource: Object.entries(resource.attributes).flat(), scope: { name: 'tollgate', version } };
  const batch = settings.protocol === 'http/json' ? new JsonSpanBatch(source) : new ProtoSpanBatch(source);
  const processor = new EncodingSpanProcessor(batch, sender, { maxBatchSpans: MAX_BATCH_SPANS, delayMs: 1_000 });
  // Parent-based (the default): an incoming traceparent's decision is followed, new traces are sampled at the ratio.
  // Otherwise (OTEL_TRACES_SAMPLER=always_off, traceidratio, ...) the ratio decides for every trace.
  const root = rootSampler(settings.sampleRatio);
  const sampler = settings.followParent === false ? root : new ParentBasedSampler({ root });
  return { sampler, processor, samplesEveryNewTrace: settings.sampleRatio >= 1 };
}

/** The sampler of new traces: the ratio's, or the constant ones at 1 and 0 (no hashing of the trace id). */
function rootSampler(ratio: number): Sampler {
  if (ratio >= 1) return new AlwaysOnSampler();
  if (ratio <= 0) return new AlwaysOffSampler();
  return new TraceIdRatioBasedSampler(ratio);
}

/** Which requests are traced, and where their finished spans go. */
export interface SpanExport {
  sampler: Sampler;
  /**
   * The ratio is 1: a trace the request starts is sampled without asking the sampler (what its always-on root
   * would answer, with no trace state).
   */
  samplesEveryNewTrace: boolean;
  processor: EncodingSpanProcessor;
}
