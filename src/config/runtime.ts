import { join } from 'node:path';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { normalizeAddress } from './address.js';
import { createHash } from 'node:crypto';
import { allVendors, adapterFor, vendorById } from '../providers/registry.js';
import { apiRoot, baseUrlProblem, splitBaseQuery } from '../providers/base-url.js';
import { DEFAULTS } from './defaults.js';
import { didYouMean, didYouMeanHint } from '../core/did-you-mean.js';
import { resolveNetwork } from './network.js';
import { compileGuardrails } from '../guardrails/scanner.js';
import { backtrackingRisk } from '../guardrails/detectors/regex-list.js';
import { tradedRepetitions } from '../guardrails/detectors/traded-repetitions.js';
import type { GuardrailRule } from '../guardrails/rules.js';
import { DEFAULT_ROUTING_POLICY, resolveRoutingPolicy } from './routing-policy.js';
import { CLIENT_IP_HEADERS, hasIllegalHeaderChars, LOG_LEVELS, MAX_TIMER_MS, type ConfigDocument, type ProviderConfig, type ProviderKeyConfig, type RouteConfig } from './schema.js';
import { ConfigError, isDataDirSecretKey, resolveSecret, type Env } from './secret-ref.js';
import { checkEntraFields, resolveEntraAuth } from './entra-auth.js';
import { resolvePluginOptions } from './plugin-options.js';
import { freezeRuntimeConfig } from './read-only.js';
import { otelTracingEnv } from './otel-env.js';
import type { AwsChainSettings, EntraCredential } from '../core/provider.js';
import { DEFAULT_MCP_MAX_ANSWER_BYTES } from '../core/mcp.js';
import { checkRouteMcpNames } from './route-mcp-names.js';
import type { AlertChannelConfig, AlertChannelRuntime, AlertRuleRuntime, AlertsConfig, AlertsRuntime, CacheConfig, CacheSettings, ClientIpHeader, ConfigSource, ConfigWarning, GuardrailRuleConfig, GuardrailsSettings, McpConfig, McpServerRuntime, McpSettings, PluginEntryConfig, ProviderKey, ProviderRuntime, RouteRuntime, RoutingRuleConfig, RuntimeConfig, Settings } from '../core/config.js';

/** The layers a config is made of, lowest precedence last: API over file over environment over defaults. */
export interface ConfigLayers {
  api: ConfigDocument;
  file: ConfigDocument;
}

function firstEnv(env: Env, names: string[]): string | undefined {
  for (const name of names) {
    const value = env[name];
    // Blank counts as unset: `OPENAI_API_KEY= ` (or a compose file's "${OPENAI_API_KEY}" of an unset variable) is no key.
    if (value !== undefined && value.trim() !== '') return value;
  }
  return undefined;
}

/**
 * The vendor's base URL from the environment, checked: a value that is not an http(s) URL stops the start with
 * the variable's name, instead of failing every request to that provider later.
 */
function baseUrlFromEnv(env: Env, names: string[], example: string): string | undefined {
  for (const name of names) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    const problem = baseUrlProblem(value);
    // Userinfo (`user:pass@`) is a credential: the message quotes only what follows it.
    const shown = value.includes('@') ? `****@${value.slice(value.lastIndexOf('@') + 1)}` : value;
    if (problem) throw new ConfigError(`${name}: ${problem}, such as ${example}; got "${shown}"`);
    return value;
  }
  return undefined;
}

/**
 * An integer from the environment within [min, max]. The bounds are the config schema's for the same setting: a
 * value the file would refuse must not slip in through a variable (TOLLGATE_MAX_BODY_BYTES=0 refused every body,
 * even the PUT /api/config that could have fixed it).
 */
function intFromEnv(env: Env, name: string, max = Number.MAX_SAFE_INTEGER, min = 0): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  // Decimal digits only, as the message says: Number() read `0x10` as 16, `0b101` as 5 and `1e6` as 1000000.
  const value = /^\s*\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(`${name}: expected an integer from ${min} to ${max}, got "${raw}"`);
  }
  return value;
}

/** A timeout from the environment: 0 would mean no limit at all, which these settings do not offer. */
function positiveIntFromEnv(env: Env, name: string): number | undefined {
  const value = intFromEnv(env, name, MAX_TIMER_MS);
  if (value === 0) throw new ConfigError(`${name}: expected a positive number of milliseconds, got "0"`);
  return value;
}

function boolFromEnv(env: Env, name: string): boolean | undefined {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if (['true', '1', 'yes', 'on'].includes(raw)) return true;
  if (['false', '0', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name}: expected true or false, got "${env[name]}"`);
}

function anonymousAccessFromEnv(env: Env): 'loopback' | 'any' | undefined {
  const raw = env.TOLLGATE_ANONYMOUS_ACCESS?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if (raw === 'loopback' || raw === 'any') return raw;
  throw new ConfigError(`TOLLGATE_ANONYMOUS_ACCESS: expected loopback or any, got "${env.TOLLGATE_ANONYMOUS_ACCESS}"`);
}

/**
 * LOG_LEVEL, checked like settings.log_level: the logger refuses a level it does not know, which would otherwise
 * end the start with a stack trace instead of a line naming the variable. Case does not matter (`DEBUG` is common).
 */
function logLevelFromEnv(env: Env): string | undefined {
  const raw = env.LOG_LEVEL?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  if ((LOG_LEVELS as readonly string[]).includes(raw)) return raw;
  throw new ConfigError(`LOG_LEVEL: expected one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
}

/** TOLLGATE_CLIENT_IP_HEADER, checked like settings.client_ip_header; case does not matter (header names do not). */
function clientIpHeaderFromEnv(env: Env): ClientIpHeader | undefined {
  const raw = env.TOLLGATE_CLIENT_IP_HEADER?.trim().toLowerCase();
  if (raw === undefined || raw === '') return undefined;
  const header = CLIENT_IP_HEADERS.find((name) => name === raw);
  if (header !== undefined) return header;
  throw new ConfigError(`TOLLGATE_CLIENT_IP_HEADER: expected one of ${CLIENT_IP_HEADERS.join(', ')}, got "${env.TOLLGATE_CLIENT_IP_HEADER}"`);
}

function listFromEnv(env: Env, name: string): string[] | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  const items = raw.split(',').map((item) => item.trim()).filter(Boolean);
  for (const item of items) if (isIP(item) === 0) throw new ConfigError(`${name}: "${item}" is not an IP address`);
  return items;
}

/**
 * Settings: API over file over environment over defaults, except the address and data directory, which are
 * read once at start and where the environment wins (platforms set PORT and HOST).
 */
function resolveSettings(layers: ConfigLayers, env: Env, warnings: ConfigWarning[]): Settings {
  const api = layers.api.settings ?? {};
  const file = layers.file.settings ?? {};
  return {
    host: env.HOST || api.host || file.host || DEFAULTS.host,
    port: intFromEnv(env, 'PORT', 65535) ?? api.port ?? file.port ?? DEFAULTS.port,
    // The data directory holds the API layer itself, so the API cannot move it.
    dataDir: env.TOLLGATE_DATA_DIR || file.data_dir || DEFAULTS.dataDir,
    maxBodyBytes: api.max_body_bytes ?? file.max_body_bytes ?? intFromEnv(env, 'TOLLGATE_MAX_BODY_BYTES', MAX_TIMER_MS, 1) ?? DEFAULTS.maxBodyBytes,
    upstreamTimeouts: {
      firstByteMs:
        api.upstream_timeouts?.first_byte_ms ??
        file.upstream_timeouts?.first_byte_ms ??
        positiveIntFromEnv(env, 'TOLLGATE_FIRST_BYTE_TIMEOUT_MS') ??
        DEFAULTS.firstByteTimeoutMs,
      totalMs:
        api.upstream_timeouts?.total_ms ?? file.upstream_timeouts?.total_ms ?? positiveIntFromEnv(env, 'TOLLGATE_TIMEOUT_MS') ?? DEFAULTS.totalTimeoutMs,
      idleMs: api.upstream_timeouts?.idle_ms ?? file.upstream_timeouts?.idle_ms ?? positiveIntFromEnv(env, 'TOLLGATE_IDLE_TIMEOUT_MS') ?? DEFAULTS.idleTimeoutMs,
    },
    shutdownGraceMs: api.shutdown_grace_ms ?? file.shutdown_grace_ms ?? intFromEnv(env, 'TOLLGATE_SHUTDOWN_GRACE_MS', MAX_TIMER_MS) ?? DEFAULTS.shutdownGraceMs,
    streamKeepaliveMs: api.stream_keepalive_ms ?? file.stream_keepalive_ms ?? DEFAULTS.streamKeepaliveMs,
    requestTimeoutMs:
      api.request_timeout_ms ?? file.request_timeout_ms ?? positiveIntFromEnv(env, 'TOLLGATE_REQUEST_TIMEOUT_MS') ?? DEFAULTS.requestTimeoutMs,
    headersTimeoutMs:
      api.headers_timeout_ms ?? file.headers_timeout_ms ?? positiveIntFromEnv(env, 'TOLLGATE_HEADERS_TIMEOUT_MS') ?? DEFAULTS.headersTimeoutMs,
    logLevel: api.log_level ?? file.log_level ?? logLevelFromEnv(env) ?? DEFAULTS.logLevel,
    logRetentionDays: api.log_retention_days ?? file.log_retention_days ?? DEFAULTS.logRetentionDays,
    logMaxEntries: api.log_max_entries ?? file.log_max_entries ?? null,
    logMaxBytes: api.log_max_bytes ?? file.log_max_bytes ?? null,
    responseRetentionDays: api.response_retention_days ?? file.response_retention_days ?? DEFAULTS.responseRetentionDays,
    responseMaxEntries: api.response_max_entries ?? file.response_max_entries ?? DEFAULTS.responseMaxEntries,
    responseMaxBytes: api.response_max_bytes ?? file.response_max_bytes ?? DEFAULTS.responseMaxBytes,
    maxResponseBytes:
      api.max_response_bytes ?? file.max_response_bytes ?? intFromEnv(env, 'TOLLGATE_MAX_RESPONSE_BYTES', 2_147_483_648, 1024) ?? DEFAULTS.maxResponseBytes,
    requireVirtualKey: api.require_virtual_key ?? file.require_virtual_key ?? boolFromEnv(env, 'TOLLGATE_REQUIRE_VIRTUAL_KEY') ?? false,
    anonymousAccess: api.anonymous_access ?? file.anonymous_access ?? anonymousAccessFromEnv(env) ?? 'loopback',
    trustedProxies: new Set((api.trusted_proxies ?? file.trusted_proxies ?? listFromEnv(env, 'TOLLGATE_TRUSTED_PROXIES') ?? []).map(normalizeAddress)),
    clientIpHeader: api.client_ip_header ?? file.client_ip_header ?? clientIpHeaderFromEnv(env) ?? null,
    forwardHeaders: api.forward_headers ?? file.forward_headers ?? [],
    upstreamRateLimitHeaders: api.upstream_rate_limit_headers ?? file.upstream_rate_limit_headers ?? true,
    routing: resolveRoutingPolicy(DEFAULT_ROUTING_POLICY, api.routing, file.routing),
    metrics: {
      enabled: api.metrics?.enabled ?? file.metrics?.enabled ?? boolFromEnv(env, 'TOLLGATE_METRICS') ?? true,
      bearerToken: metricsToken(api.metrics?.bearer_token, file.metrics?.bearer_token, env, env.TOLLGATE_DATA_DIR || file.data_dir || DEFAULTS.dataDir),
    },
    tracing: resolveTracing(api.tracing, file.tracing, env, env.TOLLGATE_DATA_DIR || file.data_dir || DEFAULTS.dataDir, warnings),
    logBodies: {
      enabled: api.log_bodies?.enabled ?? file.log_bodies?.enabled ?? false,
      maxBytes: api.log_bodies?.max_bytes ?? file.log_bodies?.max_bytes ?? DEFAULTS.logBodyMaxBytes,
      redact: checkedPatterns(api.log_bodies?.redact ?? file.log_bodies?.redact ?? []),
    },
    network: resolveNetwork(api.network, file.network, env),
  };
}

/** The /metrics token: the API's (a literal), else the file's (references allowed), else TOLLGATE_METRICS_TOKEN. */
function metricsToken(api: string | undefined, file: string | undefined, env: Env, dataDir: string): string | null {
  const where = 'settings.metrics.bearer_token';
  if (api !== undefined) return resolveSecret(api, env, where, { referencesAllowed: false, dataDir });
  if (file !== undefined) return resolveSecret(file, env, where, { referencesAllowed: true, dataDir });
  return env.TOLLGATE_METRICS_TOKEN || null;
}

type TracingInput = NonNullable<NonNullable<ConfigDocument['settings']>['tracing']>;

/**
 * Tracing: the API over the file over the standard OTEL_* variables (otel-env.ts); off without an endpoint. While it
 * is off the variables that only tune it are not read: another service's sampler or headers in a shared environment
 * concern this gateway only once it exports.
 */
function resolveTracing(api: TracingInput | undefined, file: TracingInput | undefined, env: Env, dataDir: string, warnings: ConfigWarning[]): Settings['tracing'] {
  const otel = otelTracingEnv(env, warnings);
  const configured = api?.endpoint ?? file?.endpoint;
  // `enabled: false` is the one way to turn off through the API an endpoint the file or the environment names (a merge
  // patch's null only removes the API's own endpoint, and the file's applies again).
  const enabled = api?.enabled ?? file?.enabled ?? true;
  const endpoint = enabled ? (configured ?? otel.endpoint()) : null;
  if (endpoint !== null && !/^https?:\/\//i.test(endpoint)) throw new ConfigError('settings.tracing.endpoint: an http:// or https:// URL is expected');
  const on = endpoint !== null;
  const resourceAttributes = on ? otel.resourceAttributes() : {};
  return {
    endpoint,
    // The per-signal variable's headers over the general one's, as the OTel spec orders them.
    headers: api?.headers
      ? resolveHeaders(api.headers, 'settings.tracing.headers', secretReader(env, 'api', dataDir))
      : file?.headers
        ? resolveHeaders(file.headers, 'settings.tracing.headers', secretReader(env, 'file', dataDir))
        : on
          ? otel.headers()
          : {},
    serviceName: api?.service_name ?? file?.service_name ?? (env.OTEL_SERVICE_NAME || resourceAttributes['service.name'] || 'tollgate'),
    resourceAttributes,
    sampleRatio: api?.sample_ratio ?? file?.sample_ratio ?? (on ? otel.sampleRatio() : undefined) ?? 1,
    // The config's ratio is for new traces, under a parent that decides; the environment's sampler says for itself.
    followParent: api?.sample_ratio !== undefined || file?.sample_ratio !== undefined || !on || otel.followsParent(),
    // Read only when tracing is on: an environment shared with other services (OTEL_EXPORTER_OTLP_PROTOCOL=grpc
    // for them) must not stop a gateway that exports nothing.
    protocol: api?.protocol ?? file?.protocol ?? (on ? otel.protocol() : 'http/protobuf'),
    compression: api?.compression ?? file?.compression ?? (on ? otel.compression() : 'none'),
  };
}

/** Redaction patterns must compile; the one that does not is named. */
/**
 * The operator's redaction patterns for kept bodies, checked as guardrail patterns are: they run over every kept body
 * and every failed request's message, so one that can backtrack catastrophically is refused here.
 */
function checkedPatterns(patterns: readonly string[]): readonly string[] {
  patterns.forEach((pattern, index) => {
    try {
      new RegExp(pattern, 'g');
    } catch (err) {
      throw new ConfigError(`settings.log_bodies.redact[${index}]: not a valid regular expression (${(err as Error).message})`);
    }
    const risk = backtrackingRisk(pattern) ?? tradedRisk(pattern);
    if (risk !== null) throw new ConfigError(`settings.log_bodies.redact[${index}]: ${JSON.stringify(pattern.slice(0, 80))} refused: ${risk}`);
  });
  return patterns;
}

/**
 * Repetitions in a row that can trade characters (`\S+@\S+\.com`): these patterns run unbounded over a kept body, so
 * one near-miss body costs the square of its length (64 KB of `@`: minutes of the event loop). The analysis reads
 * Unicode-mode syntax; a pattern only valid without it is left to backtrackingRisk.
 */
function tradedRisk(pattern: string): string | null {
  try {
    new RegExp(pattern, 'u');
  } catch {
    return null;
  }
  const chain = tradedRepetitions(pattern, false, Number.POSITIVE_INFINITY);
  if (chain === null) return null;
  return `polynomial backtracking risk: the repetitions ${chain.slice(0, 60)} can match the same characters, so a near-miss tries every split between them; make them match different characters (\`[^\\s@]+@[^\\s@]+\\.com\`, not \`\\S+@\\S+\\.com\`) or bound them (\`\\S{1,30}\`)`;
}

function pickDefined<K extends string>(name: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [name]: value } as Record<K, string>);
}

/**
 * A stable id for a key defined without one: derived from its provider, its source and the key as written, never
 * from the secret alone. `occurrence` tells apart the same value written twice (0 for its first). Not from its place
 * in the list: an id is what the key's breaker and health are kept under, and taking another key out of the list
 * (or adding one before it) must not hand this one a new id, resetting an open breaker on a key that still fails.
 */
function derivedKeyId(provider: string, source: ConfigSource, occurrence: number, raw: string): string {
  const digest = createHash('sha256').update(`${provider}\0${source}\0${occurrence}\0${raw}`).digest('hex').slice(0, 10);
  return `${source}-${digest}`;
}

/**
 * Resolves a key. References (`env:`, `file:`) are honoured only from the file; a key set through the API is
 * the key itself, and for `vertex` not a path either (the adapter reads a path as a service-account file).
 * A resolved key must fit in an HTTP header, unless it is a JSON credential that is read, not sent.
 */
function resolveKey(value: string, env: Env, where: string, source: 'api' | 'file', dataDir: string, vendorFormat: string): string {
  if (vendorFormat === 'vertex' && !value.trimStart().startsWith('{') && (value.startsWith('/') || value.endsWith('.json'))) {
    if (source === 'api') {
      throw new ConfigError(`${where}: a path to a service-account file is accepted only in the config file and the environment; send the JSON itself`);
    }
    if (isDataDirSecretKey(value.trim(), dataDir)) throw new ConfigError(`${where}: ${value.trim()} is tollgate's own secret.key, which is never used as a provider key`);
  }
  const placeholder = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(value.trim());
  if (placeholder) {
    // A compose or shell placeholder nothing expanded: sent, it would be the credential, refused upstream.
    const instead = source === 'file' ? `write env:${placeholder[1]} to read the variable` : 'send the key itself';
    throw new ConfigError(`${where}: \${${placeholder[1]}} is not expanded (tollgate does not read shell-style variables); ${instead}`);
  }
  const resolved = resolveSecret(value, env, where, { referencesAllowed: source === 'file', dataDir });
  // An env: reference to a variable holding only spaces is as unset as an empty one: never a key to send.
  if (resolved.trim() === '') throw new ConfigError(`${where}: the key ${value.startsWith('env:') ? `read from environment variable ${value.slice(4)} ` : ''}is blank`);
  if (!resolved.trimStart().startsWith('{') && hasIllegalHeaderChars(resolved)) {
    throw new ConfigError(`${where}: the key holds a character not allowed in an HTTP header (CR, LF, NUL, another control character or one above U+00FF)`);
  }
  return resolved;
}

/**
 * Header values (a provider's, an MCP server's, a webhook's, the trace collector's), each read like a key through
 * `read`: `env:NAME` and `file:/path` references (from the file only) give the value sent, which must fit in an HTTP
 * header as a literal does. `where` is the headers' field (`providers.x.headers`).
 */
function resolveHeaders(headers: Readonly<Record<string, string>> | undefined, where: string, read: (value: string, field: string) => string): Record<string, string> {
  const resolved: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const field = `${where}.${name}`;
    const sent = read(value, field);
    // Named, never quoted: the value is a credential.
    if (hasIllegalHeaderChars(sent)) throw new ConfigError(`${field}: the value read holds a character not allowed in an HTTP header (CR, LF, NUL, another control character or one above U+00FF)`);
    resolved[name] = sent;
  }
  return resolved;
}

/** How a layer's secrets are read: references only from the file. */
function secretReader(env: Env, source: 'api' | 'file', dataDir: string): (value: string, field: string) => string {
  return (value, field) => resolveSecret(value, env, field, { referencesAllowed: source === 'file', dataDir });
}

function keysOf(name: string, cfg: ProviderConfig | undefined, source: 'api' | 'file', env: Env, dataDir: string, vendorFormat: string): ProviderKey[] {
  if (!cfg) return [];
  const declared: Array<ProviderKeyConfig & { where: string }> = [
    ...(cfg.api_key ? [{ value: cfg.api_key, weight: 1, where: `providers.${name}.api_key` }] : []),
    ...(cfg.keys ?? []).map((key, index) => ({ ...key, where: `providers.${name}.keys.${index}.value` })),
  ];
  const seen = new Map<string, number>();
  return declared.map((key) => {
    const occurrence = seen.get(key.value) ?? 0;
    seen.set(key.value, occurrence + 1);
    return {
      id: key.id ?? derivedKeyId(name, source, occurrence, key.value),
      value: resolveKey(key.value, env, key.where, source, dataDir, vendorFormat),
      raw: key.value,
      weight: key.weight ?? 1,
      models: key.models ?? null,
      disabled: key.disabled ?? false,
      source,
    };
  });
}

/**
 * A key id names one key of its provider: the API addresses keys by id (`/api/providers/:name/keys/:id`), and the
 * key's breaker and health are kept under it. Two keys under one id (in one list, or one set through the API under
 * the id of one in the file) would share a breaker, and the second could never be addressed.
 */
function checkKeyIds(name: string, layers: Array<{ cfg: ProviderConfig | undefined; keys: ProviderKey[]; layer: string }>): void {
  const seen = new Map<string, string>();
  for (const { cfg, keys, layer } of layers) {
    // keysOf lists the `api_key` shorthand first, then `keys`.
    const shorthand = cfg?.api_key ? 1 : 0;
    keys.forEach((key, at) => {
      const field = at < shorthand ? `providers.${name}.api_key` : `providers.${name}.keys.${at - shorthand}.id`;
      const earlier = seen.get(key.id);
      if (earlier !== undefined) throw new ConfigError(`${field}: "${key.id}" is already the id of ${earlier}; each key of a provider needs its own id`);
      seen.set(key.id, at < shorthand ? `the api_key ${layer}` : `key ${at - shorthand} ${layer}`);
    });
  }
}

/** The provider's Entra identity, when its `auth` names one: only Azure's format takes it, and never beside keys. */
function entraOption(
  name: string,
  format: string,
  configured: { auth: NonNullable<ProviderConfig['auth']>; layer: 'api' | 'file' } | null,
  keyCount: number,
  env: Env,
  dataDir: string,
  baseUrl: string,
): EntraCredential | undefined {
  if (!configured || configured.auth.type !== 'entra') return undefined;
  if (format !== 'azure') throw new ConfigError(`providers.${name}.auth: Microsoft Entra ID is for the azure and azure-ai provider types only`);
  if (keyCount > 0) throw new ConfigError(`providers.${name}.auth: an Entra identity replaces API keys; remove api_key and keys, or auth`);
  checkEntraFields(name, configured.auth);
  return resolveEntraAuth(name, configured.auth, configured.layer, env, dataDir, baseUrl);
}

/**
 * Where a Bedrock provider's AWS credentials come from when they are not a key: AWS's default credential chain, when
 * `auth: {type: aws}` asks for it, or when nothing else would sign its calls (no key configured, none in the
 * environment the adapter reads: AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY, or AWS_BEARER_TOKEN_BEDROCK). Only
 * settings here: the chain is looked at on the first call, never at start-up (a gateway off AWS must not wait on IMDS).
 */
function awsOption(name: string, format: string, auth: ProviderConfig['auth'], keyCount: number, env: Env): AwsChainSettings | undefined {
  if (auth?.type === 'aws') {
    if (format !== 'bedrock') throw new ConfigError(`providers.${name}.auth: AWS credentials are for the bedrock provider type only`);
    if (keyCount > 0) throw new ConfigError(`providers.${name}.auth: AWS's credential chain replaces keys; remove api_key and keys, or auth`);
    return { profile: auth.profile ?? null, configured: true };
  }
  if (format !== 'bedrock' || auth !== undefined || keyCount > 0) return undefined;
  if ((env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY) || env.AWS_BEARER_TOKEN_BEDROCK) return undefined;
  return { profile: null, configured: false };
}

function resolveProvider(name: string, layers: ConfigLayers, env: Env, settings: Settings): ProviderRuntime {
  const api = layers.api.providers?.[name];
  const file = layers.file.providers?.[name];
  const vendorId = api?.type ?? file?.type ?? name;
  const vendor = vendorById(vendorId);
  if (!vendor) throw new ConfigError(`providers.${name}.type: unknown provider type "${vendorId}"${didYouMeanHint(vendorId, allVendors().map((known) => known.id))}`);
  if (!adapterFor(vendor.format)) throw new ConfigError(`providers.${name}: no adapter for wire format "${vendor.format}"`);
  // A vendor's own environment variables belong to the provider of that name, not to custom instances of it.
  const ownEnv = name === vendor.id;
  const envKey = ownEnv ? firstEnv(env, vendor.keyEnv) : undefined;
  const envBaseUrl = ownEnv ? baseUrlFromEnv(env, vendor.baseUrlEnv, vendor.defaultBaseUrl) : undefined;
  // Keys configured in the file and through the API serve together; the environment's key is the fallback.
  const fileKeys = keysOf(name, file, 'file', env, settings.dataDir, vendor.format);
  const apiKeys = keysOf(name, api, 'api', env, settings.dataDir, vendor.format);
  checkKeyIds(name, [
    { cfg: file, keys: fileKeys, layer: 'of the config file' },
    { cfg: api, keys: apiKeys, layer: 'set through the API' },
  ]);
  let keys = [...fileKeys, ...apiKeys];
  // Completed once here, by the vendor's convention, so either form of a base URL works (see base-url.ts).
  // A query (`?api_key=`) is kept apart and sent after the operation's path (see splitBaseQuery).
  const { url: configuredUrl, query: baseQuery } = splitBaseQuery(api?.base_url ?? file?.base_url ?? envBaseUrl ?? vendor.defaultBaseUrl);
  const baseUrl = apiRoot(configuredUrl, vendor);
  const auth = api?.auth ?? file?.auth;
  const entra = entraOption(name, vendor.format, api?.auth ? { auth: api.auth, layer: 'api' } : file?.auth ? { auth: file.auth, layer: 'file' } : null, keys.length, env, settings.dataDir, baseUrl);
  const awsChain = auth?.type === 'aws' ? awsOption(name, vendor.format, auth, keys.length, env) : undefined;
  // An identity stands instead of keys: the environment's key (AZURE_OPENAI_API_KEY, AWS_BEARER_TOKEN_BEDROCK) is not sent beside it.
  if (keys.length === 0 && envKey && !entra && !awsChain) keys = [{ id: 'env', value: envKey, raw: `env:${vendor.keyEnv.find((n) => env[n]) ?? ''}`, weight: 1, models: null, disabled: false, source: 'env' }];
  const aws = awsChain ?? awsOption(name, vendor.format, auth, keys.length, env);
  const source: ConfigSource = api ? 'api' : file ? 'file' : envKey || envBaseUrl ? 'env' : 'builtin';
  const claudeModels = api?.claude_models ?? file?.claude_models;
  const extraParameters = api?.extra_parameters ?? file?.extra_parameters;
  return {
    name,
    vendor,
    baseUrl,
    ...(baseQuery ? { baseQuery } : {}),
    headers: {
      ...resolveHeaders(file?.headers, `providers.${name}.headers`, secretReader(env, 'file', settings.dataDir)),
      ...resolveHeaders(api?.headers, `providers.${name}.headers`, secretReader(env, 'api', settings.dataDir)),
    },
    rawHeaders: { ...file?.headers, ...api?.headers },
    rawAuth: (entra || aws?.configured) && auth ? { ...auth } : null,
    timeouts: {
      firstByteMs: api?.timeouts?.first_byte_ms ?? file?.timeouts?.first_byte_ms ?? settings.upstreamTimeouts.firstByteMs,
      totalMs: api?.timeouts?.total_ms ?? file?.timeouts?.total_ms ?? settings.upstreamTimeouts.totalMs,
      idleMs: api?.timeouts?.idle_ms ?? file?.timeouts?.idle_ms ?? settings.upstreamTimeouts.idleMs,
    },
    maxResponseBytes: api?.max_response_bytes ?? file?.max_response_bytes ?? settings.maxResponseBytes,
    options: {
      ...pickDefined('region', api?.region ?? file?.region ?? (ownEnv ? firstEnv(env, vendor.regionEnv ?? []) : undefined)),
      ...pickDefined('project', api?.project ?? file?.project ?? (ownEnv ? firstEnv(env, vendor.projectEnv ?? []) : undefined)),
      ...(claudeModels ? { claudeModels } : {}),
      ...pickDefined('apiVersion', api?.api_version ?? file?.api_version ?? (ownEnv ? firstEnv(env, vendor.apiVersionEnv ?? []) : undefined)),
      ...pickDefined('tokenUrl', api?.token_url ?? file?.token_url),
      ...(extraParameters ? { extraParameters } : {}),
      ...(entra ? { entra } : {}),
      ...(aws ? { aws } : {}),
    },
    keys,
    models: [...new Set([...(file?.models ?? []), ...(api?.models ?? [])])],
    source,
    keyRequired: vendor.keyRequired && ownEnv && !entra,
    prices: new Map(Object.entries({ ...file?.prices, ...api?.prices })),
  };
}

function resolveRoute(
  name: string,
  route: RouteConfig,
  source: ConfigSource,
  providers: ReadonlyMap<string, ProviderRuntime>,
  routeNames: Set<string>,
  settings: Settings,
): RouteRuntime {
  route.targets.forEach((target, i) => {
    const provider = target.model.slice(0, target.model.indexOf('/'));
    if (!providers.has(provider)) throw new ConfigError(`routes.${name}.targets.${i}.model: unknown provider "${provider}"${didYouMeanHint(provider, providers.keys())}`);
  });
  route.fallbacks.forEach((fallback, i) => {
    if (routeNames.has(fallback)) return;
    const slash = fallback.indexOf('/');
    if (slash <= 0 || !providers.has(fallback.slice(0, slash))) {
      const meant = slash > 0 ? didYouMean(fallback.slice(0, slash), providers.keys()) : didYouMean(fallback, routeNames);
      const hint = meant === null ? '' : slash > 0 ? ` (did you mean "${meant}${fallback.slice(slash)}"?)` : ` (did you mean "${meant}"?)`;
      throw new ConfigError(`routes.${name}.fallbacks.${i}: "${fallback}" is neither a route nor "<known provider>/<model>"${hint}`);
    }
  });
  return {
    name,
    targets: route.targets.map((target) => ({ model: target.model, weight: target.weight ?? 1 })),
    fallbacks: [...route.fallbacks],
    price: route.price ?? null,
    plugins: [...(route.plugins ?? [])],
    cache: route.cache ?? null,
    guardrails: route.guardrails ? checkedGuardrails(route.guardrails, `routes.${name}.guardrails`) : null,
    mcp: route.mcp ?? null,
    policy: resolveRoutingPolicy(settings.routing, route),
    policyConfig: {
      ...(route.retry ? { retry: route.retry } : {}),
      ...(route.breaker ? { breaker: route.breaker } : {}),
      ...(route.adaptive !== undefined ? { adaptive: route.adaptive } : {}),
      ...(route.fallback_on_client_errors !== undefined ? { fallback_on_client_errors: route.fallback_on_client_errors } : {}),
    },
    source,
  };
}

/** A route may list only plugins the config has with `apply: listed` (one that applies to all needs no listing). */
function checkRoutePlugins(routes: ReadonlyMap<string, RouteRuntime>, plugins: readonly PluginEntryConfig[]): void {
  const listed = new Set(plugins.filter((entry) => entry.apply === 'listed').map((entry) => entry.name));
  for (const route of routes.values()) {
    route.plugins.forEach((name, i) => {
      if (listed.has(name)) return;
      const known = plugins.some((entry) => entry.name === name);
      throw new ConfigError(
        `routes.${route.name}.plugins.${i}: "${name}" ${known ? 'applies to every request; give it apply: listed to turn it on per route' : 'is not a configured plugin'}`,
      );
    });
  }
}

function checkRoutingRules(rules: readonly RoutingRuleConfig[], providers: ReadonlyMap<string, ProviderRuntime>, routeNames: Set<string>): void {
  rules.forEach((rule, i) => {
    const to = rule.route_to;
    const slash = to.indexOf('/');
    if (!routeNames.has(to) && (slash <= 0 || !providers.has(to.slice(0, slash)))) {
      throw new ConfigError(`routing_rules.${i}.route_to: "${to}" is neither a route nor "<known provider>/<model>"`);
    }
    const target = rule.when.target_rps_gte?.target;
    if (target && !providers.has(target.slice(0, target.indexOf('/')))) {
      throw new ConfigError(`routing_rules.${i}.when.target_rps_gte.target: unknown provider in "${target}"`);
    }
  });
}

/** Why `<provider>/<model>` cannot be served with the configured keys, or null when it can (or a client key may do). */
function unservedReason(providers: ReadonlyMap<string, ProviderRuntime>, name: string): string | null {
  const slash = name.indexOf('/');
  if (slash <= 0) return null;
  const provider = providers.get(name.slice(0, slash));
  if (!provider) return null;
  const model = name.slice(slash + 1);
  if (provider.keys.length === 0) {
    if (!provider.keyRequired) return null;
    const env = provider.vendor.keyEnv[0];
    return `provider '${provider.name}' has no API key (${env ? `set ${env} or ` : ''}add one under providers.${provider.name}); it is skipped unless a client sends its own key`;
  }
  if (!model.includes('*') && !provider.keys.some((key) => key.models === null || key.models.includes(model))) {
    return `no key of provider '${provider.name}' is configured to serve model '${model}'; it is skipped`;
  }
  return null;
}

/** Targets and fallbacks that name a provider that cannot serve them: valid config, but silently skipped at request time. */
function routeWarnings(routes: ReadonlyMap<string, RouteRuntime>, providers: ReadonlyMap<string, ProviderRuntime>): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  for (const route of routes.values()) {
    route.targets.forEach((target, i) => {
      const reason = unservedReason(providers, target.model);
      if (reason) warnings.push({ field: `routes.${route.name}.targets.${i}.model`, message: `Target '${target.model}' of route '${route.name}': ${reason}.` });
    });
    route.fallbacks.forEach((fallback, i) => {
      if (fallback === route.name) {
        // A loop back to itself: cut at request time (a route is tried once per request), so it never runs.
        warnings.push({ field: `routes.${route.name}.fallbacks.${i}`, message: `Fallback '${fallback}' of route '${route.name}' is the route itself; a route is tried once per request, so this fallback never runs.` });
        return;
      }
      if (routes.has(fallback)) return;
      const reason = unservedReason(providers, fallback);
      if (reason) warnings.push({ field: `routes.${route.name}.fallbacks.${i}`, message: `Fallback '${fallback}' of route '${route.name}': ${reason}.` });
    });
  }
  return warnings;
}

/**
 * Builds the runtime config from the layers and the environment. Every built-in vendor is present (so a
 * client may bring its own key for any of them); configured ones carry keys. Throws ConfigError naming the
 * field when the combination is not valid, so a bad change never replaces a good config.
 */
export function resolveRuntimeConfig(layers: ConfigLayers, env: Env, version: number): RuntimeConfig {
  // What the settings could not use from the environment (OTEL_* variables it ignored), beside the routes' warnings.
  const envWarnings: ConfigWarning[] = [];
  const settings = resolveSettings(layers, env, envWarnings);
  if (settings.clientIpHeader !== null && settings.trustedProxies.size === 0) {
    envWarnings.push({ field: 'settings.client_ip_header', message: 'client_ip_header is read only from the proxies in settings.trusted_proxies, and none is set: the socket peer is the client.' });
  }
  const providers = new Map<string, ProviderRuntime>();
  const names = new Set([...allVendors().map((vendor) => vendor.id), ...Object.keys(layers.file.providers ?? {}), ...Object.keys(layers.api.providers ?? {})]);
  for (const name of names) providers.set(name, resolveProvider(name, layers, env, settings));

  const routeDocs = new Map<string, { route: RouteConfig; source: ConfigSource }>();
  for (const [name, route] of Object.entries(layers.file.routes ?? {})) routeDocs.set(name, { route, source: 'file' });
  // A route set through the API replaces the file's route of the same name as a whole.
  for (const [name, route] of Object.entries(layers.api.routes ?? {})) routeDocs.set(name, { route, source: 'api' });
  const routeNames = new Set(routeDocs.keys());
  const routes = new Map<string, RouteRuntime>();
  for (const [name, { route, source }] of routeDocs) routes.set(name, resolveRoute(name, route, source, providers, routeNames, settings));
  // Rules set through the API replace the file's list as a whole: their order is their meaning.
  const routingRules = layers.api.routing_rules ?? layers.file.routing_rules ?? [];
  checkRoutingRules(routingRules, providers, routeNames);
  const plugins = layers.api.plugins ?? layers.file.plugins ?? [];
  checkRoutePlugins(routes, plugins);
  const pluginOptions = resolvePluginOptions(plugins, layers.api.plugins ? 'api' : 'file', env, settings.dataDir);
  const cache = resolveCacheSettings(layers.api.cache, layers.file.cache, settings.dataDir);
  // An alerts section set through the API replaces the file's as a whole (its secrets are literals there).
  const alerts = layers.api.alerts
    ? resolveAlerts(layers.api.alerts, 'api', env, settings.dataDir, providers)
    : resolveAlerts(layers.file.alerts ?? {}, 'file', env, settings.dataDir, providers);
  // Like alerts, an API guardrails section replaces the file's as a whole: rules are an ordered list.
  const guardrailsSection = layers.api.guardrails ?? layers.file.guardrails ?? {};
  const guardrails: GuardrailsSettings = {
    rules: checkedGuardrails(guardrailsSection, 'guardrails').rules ?? [],
    outputBlock: guardrailsSection.output_block ?? 'content_filter',
    lookBehind: guardrailsSection.look_behind_chars ?? null,
  };
  const mcp = resolveMcp(layers.api.mcp ?? layers.file.mcp ?? {}, layers.api.mcp ? 'api' : 'file', env, settings.dataDir);
  checkRouteMcpNames(routes, mcp.servers);
  // Read-only from here on, before plugins' create() sees it (see read-only.ts); the config service freezes what it adds.
  return freezeRuntimeConfig({ version, settings, providers, routes, routingRules, plugins, pluginOptions, cache, guardrails, mcp, alerts, warnings: [...envWarnings, ...routeWarnings(routes, providers)] });
}

/** The mcp section: secrets (an HTTP server's token, header values, stdio env values) read, defaults filled in. */
function resolveMcp(section: McpConfig, source: 'api' | 'file', env: Env, dataDir: string): McpSettings {
  const servers = new Map<string, McpServerRuntime>();
  const origin = { referencesAllowed: source === 'file', dataDir };
  for (const [name, server] of Object.entries(section.servers ?? {})) {
    const where = `mcp.servers.${name}`;
    if (server.type === 'stdio') {
      const resolved: Record<string, string> = {};
      for (const [key, value] of Object.entries(server.env ?? {})) resolved[key] = resolveSecret(value, env, `${where}.env.${key}`, origin);
      servers.set(name, { ...server, name, ...(server.env ? { env: resolved } : {}) });
    } else {
      servers.set(name, {
        ...server,
        name,
        ...(server.token !== undefined ? { token: resolveSecret(server.token, env, `${where}.token`, origin) } : {}),
        ...(server.headers ? { headers: resolveHeaders(server.headers, `${where}.headers`, secretReader(env, source, dataDir)) } : {}),
      });
    }
  }
  return {
    servers,
    callTimeoutMs: section.call_timeout_ms ?? 30_000,
    maxResultBytes: section.max_result_bytes ?? 65_536,
    maxAnswerBytes: section.max_answer_bytes ?? DEFAULT_MCP_MAX_ANSWER_BYTES,
    maxSteps: section.agent?.max_steps ?? 5,
    timeBudgetMs: section.agent?.time_budget_ms ?? 120_000,
  };
}

/**
 * Guardrail rules compiled once to check what the schema cannot: an operator regex (a deny pattern, a national ID
 * format) that could backtrack catastrophically is refused here, with the pattern named, rather than at a request.
 */
export function checkedGuardrails<T extends { rules?: GuardrailRuleConfig[] | undefined }>(section: T, where: string): T {
  try {
    compileGuardrails(libraryRules(section.rules ?? []));
  } catch (err) {
    throw new ConfigError(`${where}.rules: ${err instanceof Error ? err.message : String(err)}`);
  }
  return section;
}

/** The rules the detection library runs (every kind but the two the stage runs itself: moderation, json_schema). */
export function libraryRules(rules: readonly GuardrailRuleConfig[]): GuardrailRule[] {
  return rules.filter((rule) => rule.kind !== 'moderation' && rule.kind !== 'json_schema') as unknown as GuardrailRule[];
}

/** The alerts section: channel secrets read, defaults filled in, every rule's channels and providers checked. */
function resolveAlerts(section: AlertsConfig, source: 'api' | 'file', env: Env, dataDir: string, providers: ReadonlyMap<string, ProviderRuntime>): AlertsRuntime {
  const channels = new Map<string, AlertChannelRuntime>();
  for (const [name, channel] of Object.entries(section.channels ?? {})) {
    const where = `alerts.channels.${name}`;
    const initialDelayMs = channel.retry?.initial_delay_ms ?? DEFAULTS.alertInitialDelayMs;
    const maxDelayMs = channel.retry?.max_delay_ms ?? Math.max(DEFAULTS.alertMaxDelayMs, initialDelayMs);
    if (maxDelayMs < initialDelayMs) throw new ConfigError(`${where}.retry.max_delay_ms: must be at least initial_delay_ms (${initialDelayMs})`);
    const policy = {
      name,
      timeoutMs: channel.timeout_ms ?? DEFAULTS.alertTimeoutMs,
      maxAttempts: channel.retry?.max_attempts ?? DEFAULTS.alertMaxAttempts,
      initialDelayMs,
      maxDelayMs,
    };
    const secret = (value: string, field: string): string => resolveSecret(value, env, `${where}.${field}`, { referencesAllowed: source === 'file', dataDir });
    channels.set(name, resolveChannel(channel, policy, secret, where));
  }
  const rules: AlertRuleRuntime[] = (section.rules ?? []).map((rule, i) => {
    const where = `alerts.rules.${i}`;
    const named = rule.channels ?? [...channels.keys()];
    if (named.length === 0) throw new ConfigError(`${where}: no channel to deliver to; define one under alerts.channels`);
    rule.channels?.forEach((name, j) => {
      if (!channels.has(name)) throw new ConfigError(`${where}.channels.${j}: "${name}" is not a channel under alerts.channels`);
    });
    if ('providers' in rule) {
      rule.providers?.forEach((name, j) => {
        if (!providers.has(name)) throw new ConfigError(`${where}.providers.${j}: "${name}" is not a known provider`);
      });
    }
    return { ...rule, severity: rule.severity ?? 'warning', cooldownMs: rule.cooldown_ms ?? DEFAULTS.alertCooldownMs, channels: named };
  });
  return { channels, rules, maxQueue: section.max_queue ?? DEFAULTS.alertMaxQueue };
}

/** One channel's own fields, its secrets read through `secret`; the delivery policy is already resolved. */
function resolveChannel(
  channel: AlertChannelConfig,
  policy: Pick<AlertChannelRuntime, 'name' | 'timeoutMs' | 'maxAttempts' | 'initialDelayMs' | 'maxDelayMs'>,
  secret: (value: string, field: string) => string,
  where: string,
): AlertChannelRuntime {
  switch (channel.type) {
    case 'webhook':
      return {
        ...policy,
        type: 'webhook',
        url: channel.url,
        secret: channel.secret === undefined ? null : secret(channel.secret, 'secret'),
        headers: resolveHeaders(channel.headers, `${where}.headers`, (value, field) => secret(value, field.slice(where.length + 1))),
      };
    case 'slack':
    case 'teams':
    case 'discord': {
      const url = secret(channel.url, 'url');
      // Named, never quoted: the URL is the credential.
      if (!isHttpUrl(url)) throw new ConfigError(`${where}.url: is not an http(s) URL`);
      return { ...policy, type: channel.type, url };
    }
    case 'pagerduty':
      return {
        ...policy,
        type: 'pagerduty',
        url: channel.url ?? DEFAULTS.pagerDutyEventsUrl,
        routingKey: secret(channel.routing_key, 'routing_key'),
        source: channel.source ?? hostname(),
      };
    case 'email': {
      const secure = channel.secure ?? false;
      if (secure && channel.starttls !== undefined) throw new ConfigError(`${where}.starttls: applies only without secure (secure is TLS from the first byte)`);
      if ((channel.username === undefined) !== (channel.password === undefined)) throw new ConfigError(`${where}: give both username and password, or neither`);
      return {
        ...policy,
        type: 'email',
        host: channel.host,
        port: channel.port ?? (secure ? 465 : 587),
        secure,
        starttls: channel.starttls ?? 'required',
        username: channel.username ?? null,
        password: channel.password === undefined ? null : secret(channel.password, 'password'),
        from: channel.from,
        to: [...channel.to],
        subjectPrefix: channel.subject_prefix ?? '[tollgate]',
        tlsRejectUnauthorized: channel.tls_reject_unauthorized ?? true,
      };
    }
  }
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/** The top-level cache section: the API's fields over the file's, over the defaults. */
function resolveCacheSettings(api: CacheConfig | undefined, file: CacheConfig | undefined, dataDir: string): CacheSettings {
  return {
    policy: {
      mode: api?.mode ?? file?.mode ?? 'off',
      ttlSeconds: api?.ttl_seconds ?? file?.ttl_seconds ?? DEFAULTS.cacheTtlSeconds,
      scope: api?.scope ?? file?.scope ?? 'team',
      cacheSampled: api?.cache_sampled ?? file?.cache_sampled ?? false,
      semantic: api?.semantic?.enabled ?? file?.semantic?.enabled ?? true,
      threshold: api?.semantic?.threshold ?? file?.semantic?.threshold ?? DEFAULTS.cacheSemanticThreshold,
    },
    maxEntries: api?.max_entries ?? file?.max_entries ?? DEFAULTS.cacheMaxEntries,
    maxBytes: api?.max_bytes ?? file?.max_bytes ?? null,
    embedder: api?.semantic?.embedder ?? file?.semantic?.embedder ?? 'use-lite',
    modelsDir: api?.semantic?.models_dir ?? file?.semantic?.models_dir ?? join(dataDir, 'models'),
  };
}
