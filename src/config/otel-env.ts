import type { ConfigWarning } from '../core/config.js';
import { hasIllegalHeaderChars } from './schema.js';
import { ConfigError, type Env } from './secret-ref.js';

/**
 * The standard OTEL_* variables as tollgate's tracing reads them (the OpenTelemetry SDK environment specification).
 *
 * They live in environments shared with other services, so they are read leniently, as the specification asks: the
 * endpoint and the protocol, which decide whether and how spans leave, are refused when unusable (a gateway that
 * was asked to export must not start exporting nowhere); the rest (sampler, its argument, headers, resource
 * attributes) are read only while tracing is on, and a value tollgate cannot use is named in a config warning and
 * left out, as if unset. None of them ever stops a gateway whose tracing is off.
 */
export interface OtelTracingEnv {
  /** The traces URL; null when none is set, or OTEL_SDK_DISABLED=true / OTEL_TRACES_EXPORTER=none. */
  endpoint(): string | null;
  protocol(): 'http/protobuf' | 'http/json';
  /** OTEL_EXPORTER_OTLP_TRACES_COMPRESSION, else OTEL_EXPORTER_OTLP_COMPRESSION; none when unset or not one tollgate has. */
  compression(): 'none' | 'gzip';
  /** OTEL_EXPORTER_OTLP_HEADERS with OTEL_EXPORTER_OTLP_TRACES_HEADERS over it, names in lower case. */
  headers(): Record<string, string>;
  resourceAttributes(): Record<string, string>;
  /** The ratio for new traces the sampler variables give; undefined when they give none. */
  sampleRatio(): number | undefined;
  /** Whether the sampler follows the parent's decision (its parentbased_ forms and the default). */
  followsParent(): boolean;
}

export function otelTracingEnv(env: Env, warnings: ConfigWarning[]): OtelTracingEnv {
  const warn = (name: string, message: string): void => {
    warnings.push({ field: `env.${name}`, message: `${name}: ${message}` });
  };
  return {
    endpoint: () => endpointFromEnv(env),
    protocol: () => protocolFromEnv(env),
    compression: () => {
      const name = env.OTEL_EXPORTER_OTLP_TRACES_COMPRESSION?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_COMPRESSION' : 'OTEL_EXPORTER_OTLP_COMPRESSION';
      const value = env[name]?.trim().toLowerCase();
      if (!value || value === 'none') return 'none';
      if (value === 'gzip') return 'gzip';
      // Spans still reach any collector uncompressed; refusing to start over it would stop a gateway for a size.
      warn(name, `'${value.slice(0, 40)}' is not supported (gzip or none); exports are not compressed`);
      return 'none';
    },
    headers: () => {
      const merged: Record<string, string> = {};
      for (const name of ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS']) {
        // Header names are case-insensitive: the per-signal variable's `authorization` replaces the general `Authorization`.
        for (const [header, value] of Object.entries(pairsFromEnv(env, name, warn))) {
          // Named, never quoted: the value is a credential.
          if (hasIllegalHeaderChars(value) || hasIllegalHeaderChars(header)) warn(name, `the header '${header.slice(0, 40)}' holds a character not allowed in an HTTP header; it is not sent`);
          else merged[header.toLowerCase()] = value;
        }
      }
      return merged;
    },
    resourceAttributes: () => pairsFromEnv(env, 'OTEL_RESOURCE_ATTRIBUTES', warn),
    sampleRatio: () => {
      const chosen = samplerOf(env);
      if (chosen === 'unsupported') {
        warn('OTEL_TRACES_SAMPLER', `'${env.OTEL_TRACES_SAMPLER?.trim().slice(0, 40)}' is not supported (always_on, always_off, traceidratio or their parentbased_ forms); the default, parentbased_always_on, is used`);
        return undefined;
      }
      if (chosen?.name === 'always_on') return 1;
      if (chosen?.name === 'always_off') return 0;
      // The argument is traceidratio's; alone (no sampler named) it is read as the default sampler's ratio.
      const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
      if (arg === undefined || arg === '') return undefined;
      const ratio = Number(arg);
      if (ratio >= 0 && ratio <= 1) return ratio;
      warn('OTEL_TRACES_SAMPLER_ARG', `'${arg.slice(0, 40)}' is not a number from 0 to 1; every new trace is sampled`);
      return undefined;
    },
    followsParent: () => {
      // Unset, or one tollgate does not have, is the default, which is parent-based (its warning comes with the ratio).
      const chosen = samplerOf(env);
      return chosen === undefined || chosen === 'unsupported' || chosen.parentBased;
    },
  };
}

interface Sampler {
  /** Without its `parentbased_` prefix. */
  name: 'always_on' | 'always_off' | 'traceidratio';
  parentBased: boolean;
}

/** OTEL_TRACES_SAMPLER: undefined when unset, `unsupported` when it names a sampler tollgate does not have. */
function samplerOf(env: Env): Sampler | 'unsupported' | undefined {
  const raw = env.OTEL_TRACES_SAMPLER?.trim().toLowerCase();
  if (!raw) return undefined;
  const name = raw.replace(/^parentbased_/, '');
  if (name === 'always_on' || name === 'always_off' || name === 'traceidratio') return { name, parentBased: raw !== name };
  return 'unsupported';
}

/** An http:// or https:// URL (the scheme in any case, as URLs allow), else null. */
function httpUrl(value: string): URL | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT with `/v1/traces` added to its path
 * (a query string stays after it). None when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
function endpointFromEnv(env: Env): string | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return null;
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  if (traces) {
    if (!httpUrl(traces)) throw new ConfigError('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: an http:// or https:// URL is expected');
    return traces;
  }
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!base) return null;
  const url = httpUrl(base);
  if (!url) throw new ConfigError('OTEL_EXPORTER_OTLP_ENDPOINT: an http:// or https:// URL is expected');
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.href;
}

/** OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL; the OTLP default is http/protobuf. */
function protocolFromEnv(env: Env): 'http/protobuf' | 'http/json' {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = env[name]?.trim();
  if (!value) return 'http/protobuf';
  if (value === 'http/protobuf' || value === 'http/json') return value;
  throw new ConfigError(`${name}: '${value.slice(0, 40)}' is not supported; tollgate exports traces over http/protobuf or http/json`);
}

/**
 * An OTel list variable (headers, resource attributes): `name=value` pairs separated by commas, values URL-encoded. A
 * list with a value that does not decode is left out whole, with a warning (as the specification says of resource
 * attributes: a half-read list would be a different one).
 */
function pairsFromEnv(env: Env, name: string, warn: (name: string, message: string) => void): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const pair of (env[name] ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      pairs[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      warn(name, 'a value is not valid URL encoding; the variable is not used');
      return {};
    }
  }
  return pairs;
}
