import { describe, expect, it } from 'vitest';
import { resolveRuntimeConfig } from '../../src/config/runtime.js';

/** The standard OTEL_* variables as tollgate reads them (the OpenTelemetry SDK environment specification). */
function tracing(env: Record<string, string>) {
  return resolveRuntimeConfig({ api: {}, file: {} }, env, 1).settings.tracing;
}

/** The same with the environment's endpoint set (tracing on), as the variables that tune tracing are read only then. */
function on(env: Record<string, string>) {
  return tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', ...env });
}

/** The config warnings the environment gave. */
function warnings(env: Record<string, string>) {
  return resolveRuntimeConfig({ api: {}, file: {} }, env, 1).warnings;
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

  it('reads the compression, per-signal first, gzip or none; another value is warned about and left out', () => {
    expect(on({}).compression).toBe('none');
    expect(on({ OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' }).compression).toBe('gzip');
    expect(on({ OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip', OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'none' }).compression).toBe('none');
    expect(on({ OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'GZIP' }).compression).toBe('gzip');
    expect(on({ OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' }).compression).toBe('none');
    expect(warnings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' }).map((w) => w.message)).toContainEqual(expect.stringMatching(/OTEL_EXPORTER_OTLP_COMPRESSION.*zstd/));
    // Not read while tracing is off.
    expect(warnings({ OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' })).toEqual([]);
  });

  it('merges the per-signal headers over the general ones', () => {
    expect(on({ OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=2', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'b=3,authorization=Bearer%20sig' }).headers).toEqual({ a: '1', b: '3', authorization: 'Bearer sig' });
    // Names are case-insensitive: the per-signal `authorization` replaces the general `Authorization` (both were sent).
    expect(on({ OTEL_EXPORTER_OTLP_HEADERS: 'Authorization=Bearer%20general', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'authorization=Bearer%20traces' }).headers).toEqual({ authorization: 'Bearer traces' });
  });

  it('reads the sampler and its argument', () => {
    expect(on({ OTEL_TRACES_SAMPLER: 'always_off' }).sampleRatio).toBe(0);
    expect(on({ OTEL_TRACES_SAMPLER: 'parentbased_always_on', OTEL_TRACES_SAMPLER_ARG: '0.2' }).sampleRatio).toBe(1);
    expect(on({ OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' }).sampleRatio).toBe(0.25);
    expect(on({ OTEL_TRACES_SAMPLER_ARG: '0.5' }).sampleRatio).toBe(0.5);
    expect(on({}).sampleRatio).toBe(1);
  });

  it('follows the parent with the parentbased_ forms and by default, and not with always_on, always_off or traceidratio', () => {
    for (const sampler of ['parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio', undefined]) {
      expect(on(sampler ? { OTEL_TRACES_SAMPLER: sampler } : {}).followParent, sampler).not.toBe(false);
    }
    for (const sampler of ['always_on', 'always_off', 'traceidratio', 'TraceIdRatio']) expect(on({ OTEL_TRACES_SAMPLER: sampler }).followParent, sampler).toBe(false);
    // The config's ratio is for new traces: a sampled parent is followed, whatever the environment says.
    expect(resolveRuntimeConfig({ api: {}, file: { settings: { tracing: { sample_ratio: 0.5 } } } }, { OTEL_TRACES_SAMPLER: 'always_off' }, 1).settings.tracing).toMatchObject({ sampleRatio: 0.5, followParent: true });
  });

  it('is off with enabled: false whatever endpoint the file or the environment names, the API over the file', () => {
    const env = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://env:4318/v1/traces' };
    const file = { settings: { tracing: { endpoint: 'http://file:4318/v1/traces' } } };
    const tracing = (api: object, fileDoc: object) => resolveRuntimeConfig({ api, file: fileDoc }, env, 1).settings.tracing.endpoint;
    expect(tracing({}, file)).toBe('http://file:4318/v1/traces');
    expect(tracing({ settings: { tracing: { enabled: false } } }, file)).toBeNull();
    expect(tracing({ settings: { tracing: { enabled: false } } }, {})).toBeNull();
    expect(tracing({}, { settings: { tracing: { enabled: false } } })).toBeNull();
    // The API's true turns on again what the file turned off (with the environment's endpoint).
    expect(tracing({ settings: { tracing: { enabled: true } } }, { settings: { tracing: { enabled: false } } })).toBe('http://env:4318/v1/traces');
  });

  it('takes resource attributes, with OTEL_SERVICE_NAME over their service.name', () => {
    expect(on({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-ra,deployment.environment=prod' })).toMatchObject({
      serviceName: 'from-ra',
      resourceAttributes: { 'service.name': 'from-ra', 'deployment.environment': 'prod' },
    });
    expect(on({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-ra', OTEL_SERVICE_NAME: 'named' }).serviceName).toBe('named');
  });

  it('never stops a gateway whose tracing is off over a variable it cannot use, and reads none of them', () => {
    // Another service's settings in a shared environment (an X-Ray sampler, a percent sign in an attribute).
    const shared = { OTEL_TRACES_SAMPLER: 'xray', OTEL_TRACES_SAMPLER_ARG: '5', OTEL_RESOURCE_ATTRIBUTES: 'team=50%off', OTEL_EXPORTER_OTLP_HEADERS: 'x=%zz' };
    expect(tracing(shared)).toMatchObject({ endpoint: null, headers: {}, resourceAttributes: {}, sampleRatio: 1 });
    expect(tracing({ ...shared, OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }).endpoint).toBeNull();
    expect(warnings(shared)).toEqual([]);
  });

  it('with tracing on, leaves out what it cannot use and says so in a config warning, as the OTel spec asks', () => {
    const env = { OTEL_TRACES_SAMPLER: 'parentbased_jaeger_remote', OTEL_RESOURCE_ATTRIBUTES: 'team=50%off,tier=gold', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    // The default sampler (parent-based, every new trace), and no resource attribute of a list that does not decode.
    expect(tracing(env)).toMatchObject({ sampleRatio: 1, followParent: true, resourceAttributes: {} });
    expect(warnings(env).map((warning) => warning.field)).toEqual(['env.OTEL_RESOURCE_ATTRIBUTES', 'env.OTEL_TRACES_SAMPLER']);
    expect(on({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '5' }).sampleRatio).toBe(1);
    expect(warnings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_SAMPLER_ARG: 'half' })[0]).toMatchObject({ field: 'env.OTEL_TRACES_SAMPLER_ARG' });
  });

  it('drops a header whose value holds a control character (every export would fail), naming it but not its value', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-token=abc%0Ad,x-team=gold' };
    expect(tracing(env).headers).toEqual({ 'x-team': 'gold' });
    const [warning] = warnings(env);
    expect(warning?.message).toContain("'x-token'");
    expect(warning?.message).not.toContain('abc');
  });

  it('takes an endpoint whose scheme is written in capitals, as URLs allow', () => {
    expect(tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'HTTPS://c:4318/v1/traces' }).endpoint).toBe('HTTPS://c:4318/v1/traces');
    expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'HTTP://c:4318' }).endpoint).toBe('http://c:4318/v1/traces');
    expect(() => tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'ftp://c/v1/traces' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/);
  });
});
