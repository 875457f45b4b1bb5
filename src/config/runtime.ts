import type { ResolvedProvider, UpstreamTimeouts } from '../providers/contract.js';
import { allVendors, adapterFor, vendorById } from '../providers/registry.js';
import { DEFAULTS } from './defaults.js';
import type { ConfigFile, ProviderConfig } from './schema.js';
import { ConfigError, resolveSecret, type Env } from './secret-ref.js';

export interface ProviderKey {
  value: string;
  weight: number;
  /** Models the key may serve; null means all. */
  models: string[] | null;
  source: 'config' | 'env';
}

export interface ProviderRuntime extends ResolvedProvider {
  keys: ProviderKey[];
  /** Extra models to list beside the catalogue. */
  models: string[];
  /** Where the provider's definition came from, shown to operators. */
  source: 'config' | 'env' | 'builtin';
  /** Whether a request needs a credential; custom instances without keys are taken to be open servers. */
  keyRequired: boolean;
}

export interface Settings {
  host: string;
  port: number;
  dataDir: string;
  maxBodyBytes: number;
  upstreamTimeouts: UpstreamTimeouts;
  shutdownGraceMs: number;
  logLevel: string;
}

/** One immutable, fully resolved configuration. Everything per request reads from here, nothing re-parses. */
export interface RuntimeConfig {
  version: number;
  settings: Settings;
  providers: ReadonlyMap<string, ProviderRuntime>;
}

function firstEnv(env: Env, names: string[]): string | undefined {
  for (const name of names) {
    const value = env[name];
    if (value !== undefined && value !== '') return value;
  }
  return undefined;
}

function intFromEnv(env: Env, name: string, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new ConfigError(`${name}: expected an integer from 0 to ${max}, got "${raw}"`);
  }
  return value;
}

function resolveSettings(file: ConfigFile, env: Env): Settings {
  const s = file.settings ?? {};
  return {
    host: env.HOST || s.host || DEFAULTS.host,
    port: intFromEnv(env, 'PORT', 65535) ?? s.port ?? DEFAULTS.port,
    dataDir: env.TOLLGATE_DATA_DIR || s.data_dir || DEFAULTS.dataDir,
    maxBodyBytes: intFromEnv(env, 'TOLLGATE_MAX_BODY_BYTES') ?? s.max_body_bytes ?? DEFAULTS.maxBodyBytes,
    upstreamTimeouts: {
      firstByteMs: intFromEnv(env, 'TOLLGATE_FIRST_BYTE_TIMEOUT_MS') ?? s.upstream_timeouts?.first_byte_ms ?? DEFAULTS.firstByteTimeoutMs,
      totalMs: intFromEnv(env, 'TOLLGATE_TIMEOUT_MS') ?? s.upstream_timeouts?.total_ms ?? DEFAULTS.totalTimeoutMs,
    },
    shutdownGraceMs: intFromEnv(env, 'TOLLGATE_SHUTDOWN_GRACE_MS') ?? s.shutdown_grace_ms ?? DEFAULTS.shutdownGraceMs,
    logLevel: env.LOG_LEVEL || s.log_level || DEFAULTS.logLevel,
  };
}

function keysFromFile(name: string, cfg: ProviderConfig | undefined, env: Env): ProviderKey[] {
  if (!cfg) return [];
  const keys: ProviderKey[] = [];
  if (cfg.api_key) keys.push({ value: resolveSecret(cfg.api_key, env, `providers.${name}.api_key`), weight: 1, models: null, source: 'config' });
  cfg.keys?.forEach((key, i) => {
    keys.push({
      value: resolveSecret(key.value, env, `providers.${name}.keys.${i}.value`),
      weight: key.weight,
      models: key.models ?? null,
      source: 'config',
    });
  });
  return keys;
}

function resolveProvider(name: string, cfg: ProviderConfig | undefined, env: Env, settings: Settings): ProviderRuntime {
  const vendorId = cfg?.type ?? name;
  const vendor = vendorById(vendorId);
  if (!vendor) throw new ConfigError(`providers.${name}.type: unknown provider type "${vendorId}"`);
  if (!adapterFor(vendor.format)) throw new ConfigError(`providers.${name}: no adapter for wire format "${vendor.format}"`);
  // A vendor's own environment variables belong to the provider of that name, not to custom instances of it.
  const ownEnv = name === vendor.id;
  const envKey = ownEnv ? firstEnv(env, vendor.keyEnv) : undefined;
  const envBaseUrl = ownEnv ? firstEnv(env, vendor.baseUrlEnv) : undefined;
  // Environment variables override the file for the items they name (see README, "Configuration").
  const keys: ProviderKey[] = envKey ? [{ value: envKey, weight: 1, models: null, source: 'env' }] : keysFromFile(name, cfg, env);
  return {
    name,
    vendor,
    baseUrl: (envBaseUrl ?? cfg?.base_url ?? vendor.defaultBaseUrl).replace(/\/+$/, ''),
    headers: cfg?.headers ?? {},
    timeouts: {
      firstByteMs: cfg?.timeouts?.first_byte_ms ?? settings.upstreamTimeouts.firstByteMs,
      totalMs: cfg?.timeouts?.total_ms ?? settings.upstreamTimeouts.totalMs,
    },
    keys,
    models: cfg?.models ?? [],
    source: cfg ? 'config' : envKey || envBaseUrl ? 'env' : 'builtin',
    keyRequired: vendor.keyRequired && ownEnv,
  };
}

/**
 * Builds the runtime config from the file's content and the environment. Every built-in vendor is present
 * (so a client may bring its own key for any of them); configured ones carry keys.
 */
export function resolveRuntimeConfig(file: ConfigFile, env: Env, version: number): RuntimeConfig {
  const settings = resolveSettings(file, env);
  const providers = new Map<string, ProviderRuntime>();
  for (const vendor of allVendors()) {
    providers.set(vendor.id, resolveProvider(vendor.id, file.providers?.[vendor.id], env, settings));
  }
  for (const [name, cfg] of Object.entries(file.providers ?? {})) {
    if (!providers.has(name)) providers.set(name, resolveProvider(name, cfg, env, settings));
  }
  return { version, settings, providers };
}
