import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';

/** The standard OTEL_* variables as tollgate reads them (the OpenTelemetry SDK environment specification). */
function tracing(env: Record<string, string>) {
  return resolveRuntimeConfig({ api: {}, file: {} }, env, 1).settings.tracing;
}

describe('tracing settings from the OTEL_* environment', () => {
  it('adds /v1/traces to the general endpoint path, keeping its query, and takes the traces endpoint as it is', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).endpoint).toBe('http://collector:4318/v1/traces');
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/base/?tok=1' }).endpoint).toBe('http://collector:4318/base/v1/traces?tok=1');
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:2/x?y=1' }).endpoint).toBe('http://b:2/x?y=1');
    expect(() => tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, and reads no protocol while off', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }).endpoint).toBeNull();
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }).endpoint).toBeNull();
    // Another service's gRPC setting in a shared environment does not stop a gateway that exports nothing.
    expect(tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toMatchObject({ endpoint: null, protocol: 'http/protobuf' });
    expect(() => tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/grpc/);
  });

  it('merges the per-signal headers over the general ones', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3,authorization=Bearer%20sig' }).headers).toEqual({ a: '1', b: '3', authorization: 'Bearer sig' });
  });

  it('reads the sampler and its argument', () => {
    expect(tracing({ OTEL_TRACES_SAMPLER: 'always_off' }).sampleRatio).toBe(0);
    expect(tracing({ OTEL_TRACES_SAMPLER: 'parentbased_always_on', OTEL_TRACES_SAMPLER_ARG: '0.2' }).sampleRatio).toBe(1);
    expect(tracing({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).sampleRatio).toBe(0.25);
    expect(tracing({ OTEL_TRACES_SAMPLER_ARG: '0.5' }).sampleRatio).toBe(0.5);
    expect(tracing({}).sampleRatio).toBe(1);
    expect(() => tracing({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toThrow(/OTEL_TRACES_SAMPLER/);
  });

  it('follows the parent with the parentbased_ forms and by default, and not with always_on, always_off or traceidratio', () => {
    for (const sampler of ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', undefined]) {
      expect(tracing(sampler ? { OTEL_TRACES_SAMPLER: sampler } : {}).followParent, sampler).not.toBe(false);
    }
    for (const sampler of ['always_on', 'always_off', 'traceidratio', 'TraceIdRatio']) expect(tracing({ OTEL_TRACES_SAMPLER: sampler }).followParent, sampler).toBe(false);
    // The config's ratio is for new traces: a sampled parent is followed, whatever the environment says.
    expect(resolveRuntimeConfig({ api: {}, file: { settings: { tracing: { sample_ratio: 0.5 } } } }, { OTEL_TRACES_SAMPLER: 'always_off' }, 1).settings.tracing).toMatchObject({ sampleRatio: 0.5, followParent: true });
  });

  it('takes resource attributes, with OTEL_SERVICE_NAME over their service.name', () => {
    expect(tracing({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-ra,deployment.environment=prod' })).toMatchObject({
      serviceName: 'from-ra',
      resourceAttributes: { 'service.name': 'from-ra', 'deployment.environment': 'prod' },
    });
    expect(tracing({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-ra', OTEL_SERVICE_NAME: 'named' }).serviceName).toBe('named');
  });
});
