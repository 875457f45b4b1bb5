import type { RoutingPolicy } from '../core/config.js';
import type { ConfigDocument } from './schema.js';
import type { CacheSettings, GuardrailsSettings, ProviderRuntime, RouteRuntime, Settings } from '../core/config.js';
import { maskSecret } from './secret-box.js';
import { maskArgs } from '../core/mcp-arg-secrets.js';
import { mapPluginSecrets, maskPluginEntries, NO_PLUGIN_SECRETS, type PluginSecrets } from './plugin-secrets.js';
import type { ProviderView, RouteView } from './views.js';
import { isSensitiveHeader, SENSITIVE_QUERY } from '../core/credential-names.js';
import { baseUrlWithQuery } from '../providers/base-url.js';

export { isSensitiveHeader };

/** Header values that may carry credentials are masked like keys. */
export function maskHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) out[name] = isSensitiveHeader(name) ? maskSecret(value) : value;
  return out;
}

/**
 * A URL with its userinfo (`user:pass@`) masked as `****@`, and the values of query parameters named like
 * credentials (`?api_key=`, `?token=`, `?sig=`): credentials in a base URL are shown and logged like any other
 * secret, while the rest (`?api-version=`) stays readable. Anything that does not parse as a URL is returned as
 * it is.
 */
export function maskUrl(url: string): string {
  return maskQuery(maskUserinfo(url), (name) => SENSITIVE_QUERY.test(name));
}

function maskUserinfo(url: string): string {
  if (!url.includes('@')) return url;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  if (parsed.username === '' && parsed.password === '') return url;
  // Rebuilt from the parsed parts: an unescaped `@` inside the password must not leave a piece of it behind.
  const path = parsed.pathname === '/' && !url.endsWith('/') ? '' : parsed.pathname;
  return `${parsed.protocol}//****@${parsed.host}${path}${parsed.search}${parsed.hash}`;
}

/** The URL with the values of the query parameters `masked` names replaced by `****`. */
function maskQuery(url: string, masked: (name: string) => boolean): string {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const hash = url.indexOf('#', query);
  const search = url.slice(query + 1, hash === -1 ? undefined : hash);
  const out = search
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      return equals === -1 || equals === pair.length - 1 || !masked(pair.slice(0, equals)) ? pair : `${pair.slice(0, equals)}=****`;
    })
    .join('&');
  return `${url.slice(0, query + 1)}${out}${hash === -1 ? '' : url.slice(hash)}`;
}

/**
 * A URL that is itself a credential's carrier (a webhook, an MCP server, a trace collector) as the API shows it:
 * its user and password and every query value masked, the host and path left to read. Receivers often take their
 * token in the query (`?token=...`); a value written back as read stands for the stored one (see unmask.ts).
 */
export function maskWebhookUrl(url: string): string {
  return maskQuery(maskUserinfo(url), () => true);
}

/** A provider's `auth` with its client secret masked as a key is (a reference shown as written); AWS's chain holds none. */
function maskedAuth<T extends object>(auth: T): T {
  const secret = (auth as { client_secret?: unknown }).client_secret;
  return typeof secret === 'string' ? { ...auth, client_secret: maskSecret(secret) } : { ...auth };
}

export function providerView(provider: ProviderRuntime): ProviderView {
  return {
    name: provider.name,
    type: provider.vendor.id,
    base_url: maskUrl(baseUrlWithQuery(provider)),
    // As written: a header read from a reference shows the reference, never the value it gave.
    headers: maskHeaders(provider.rawHeaders),
    timeouts: { first_byte_ms: provider.timeouts.firstByteMs, total_ms: provider.timeouts.totalMs, idle_ms: provider.timeouts.idleMs },
    max_response_bytes: provider.maxResponseBytes,
    models: provider.models,
    ...(provider.options.region ? { region: provider.options.region } : {}),
    ...(provider.options.project ? { project: provider.options.project } : {}),
    ...(provider.options.claudeModels ? { claude_models: [...provider.options.claudeModels] } : {}),
    ...(provider.options.apiVersion ? { api_version: provider.options.apiVersion } : {}),
    ...(provider.options.tokenUrl ? { token_url: provider.options.tokenUrl } : {}),
    ...(provider.options.extraParameters ? { extra_parameters: provider.options.extraParameters } : {}),
    ...(provider.rawAuth ? { auth: maskedAuth(provider.rawAuth) } : {}),
    ...(provider.prices.size > 0 ? { prices: Object.fromEntries([...provider.prices].map(([model, price]) => [model, { ...price }])) } : {}),
    keys: provider.keys.map((key) => ({ id: key.id, value: maskSecret(key.raw), weight: key.weight, models: key.models, ...(key.disabled ? { disabled: true } : {}), source: key.source })),
    source: provider.source,
  };
}

/** The effective top-level cache settings, in the config's own field names. */
export function cacheView(cache: CacheSettings): Record<string, unknown> {
  const { policy } = cache;
  return {
    mode: policy.mode,
    ttl_seconds: policy.ttlSeconds,
    scope: policy.scope,
    cache_sampled: policy.cacheSampled,
    max_entries: cache.maxEntries,
    // Shown when set: a view written back (PUT /api/config, the settings page) keeps the byte bound.
    ...(cache.maxBytes !== null ? { max_bytes: cache.maxBytes } : {}),
    semantic: { enabled: policy.semantic, threshold: policy.threshold, embedder: cache.embedder, models_dir: cache.modelsDir },
  };
}

/** The top-level guardrails in effect, in the config's own field names. */
export function guardrailsView(guardrails: GuardrailsSettings): Record<string, unknown> {
  return {
    rules: structuredClone([...guardrails.rules]),
    output_block: guardrails.outputBlock,
    ...(guardrails.lookBehind !== null ? { look_behind_chars: guardrails.lookBehind } : {}),
  };
}

export function routeView(route: RouteRuntime): RouteView {
  return {
    name: route.name,
    targets: route.targets.map((t) => ({ ...t })),
    fallbacks: [...route.fallbacks],
    ...(route.price ? { price: { ...route.price } } : {}),
    ...(route.plugins.length > 0 ? { plugins: [...route.plugins] } : {}),
    ...(route.cache ? { cache: structuredClone(route.cache) } : {}),
    ...(route.guardrails ? { guardrails: structuredClone(route.guardrails) } : {}),
    // Shown like cache and guardrails: a route read and written back (PUT /api/routes, PUT /api/config) keeps its MCP tools.
    ...(route.mcp ? { mcp: structuredClone(route.mcp) } : {}),
    ...structuredClone(route.policyConfig),
    source: route.source,
  };
}

/** The effective routing policy in the config's own field names. */
export function routingPolicyView(policy: RoutingPolicy): Record<string, unknown> {
  const { retry, breaker } = policy;
  return {
    retry: {
      ...(retry.maxAttempts !== null ? { max_attempts: retry.maxAttempts } : {}),
      initial_delay_ms: retry.initialDelayMs,
      max_delay_ms: retry.maxDelayMs,
      deadline_ms: retry.deadlineMs,
    },
    breaker: {
      enabled: breaker.enabled,
      consecutive_failures: breaker.consecutiveFailures,
      failure_rate: breaker.failureRate,
      window_ms: breaker.windowMs,
      min_requests: breaker.minRequests,
      cooldown_ms: breaker.cooldownMs,
      half_open_requests: breaker.halfOpenRequests,
    },
    adaptive: policy.adaptive,
    fallback_on_client_errors: policy.fallbackOnClientErrors,
  };
}

export function settingsView(settings: Settings): Record<string, unknown> {
  return {
    host: settings.host,
    port: settings.port,
    data_dir: settings.dataDir,
    max_body_bytes: settings.maxBodyBytes,
    upstream_timeouts: {
      first_byte_ms: settings.upstreamTimeouts.firstByteMs,
      total_ms: settings.upstreamTimeouts.totalMs,
      idle_ms: settings.upstreamTimeouts.idleMs,
    },
    shutdown_grace_ms: settings.shutdownGraceMs,
    stream_keepalive_ms: settings.streamKeepaliveMs,
    log_level: settings.logLevel,
    log_retention_days: settings.logRetentionDays,
    ...(settings.logMaxEntries !== null ? { log_max_entries: settings.logMaxEntries } : {}),
    ...(settings.logMaxBytes !== null ? { log_max_bytes: settings.logMaxBytes } : {}),
    response_retention_days: settings.responseRetentionDays,
    response_max_entries: settings.responseMaxEntries,
    response_max_bytes: settings.responseMaxBytes,
    max_response_bytes: settings.maxResponseBytes,
    request_timeout_ms: settings.requestTimeoutMs,
    headers_timeout_ms: settings.headersTimeoutMs,
    require_virtual_key: settings.requireVirtualKey,
    anonymous_access: settings.anonymousAccess,
    trusted_proxies: [...settings.trustedProxies],
    ...(settings.clientIpHeader !== null ? { client_ip_header: settings.clientIpHeader } : {}),
    forward_headers: [...settings.forwardHeaders],
    upstream_rate_limit_headers: settings.upstreamRateLimitHeaders,
    routing: routingPolicyView(settings.routing),
    // The token is never shown, only whether one is required.
    metrics: { enabled: settings.metrics.enabled, bearer_token_set: settings.metrics.bearerToken !== null },
    tracing: {
      endpoint: settings.tracing.endpoint === null ? null : maskWebhookUrl(settings.tracing.endpoint),
      headers: Object.fromEntries(Object.keys(settings.tracing.headers).map((name) => [name, '***'])),
      service_name: settings.tracing.serviceName,
      sample_ratio: settings.tracing.sampleRatio,
      protocol: settings.tracing.protocol,
      compression: settings.tracing.compression ?? 'none',
    },
    log_bodies: { enabled: settings.logBodies.enabled, max_bytes: settings.logBodies.maxBytes, redact: [...settings.logBodies.redact] },
    // What runs, from the file or the environment; a proxy's password is masked.
    network: {
      http_proxy: settings.network.httpProxy === null ? null : maskUrl(settings.network.httpProxy),
      https_proxy: settings.network.httpsProxy === null ? null : maskUrl(settings.network.httpsProxy),
      no_proxy: settings.network.noProxy === '' ? [] : settings.network.noProxy.split(/[,\s]+/).filter(Boolean),
      ca_file: settings.network.caFile,
    },
  };
}

/** Settings with their secrets (the metrics token, tracing export headers) passed through `transform`. */
function settingsSecrets(settings: ConfigDocument['settings'], transform: (value: string) => string): ConfigDocument['settings'] {
  if (!settings || (!settings.metrics?.bearer_token && !settings.tracing?.headers)) return settings;
  return {
    ...settings,
    ...(settings.metrics?.bearer_token ? { metrics: { ...settings.metrics, bearer_token: transform(settings.metrics.bearer_token) } } : {}),
    ...(settings.tracing?.headers
      ? { tracing: { ...settings.tracing, headers: Object.fromEntries(Object.entries(settings.tracing.headers).map(([name, value]) => [name, transform(value)])) } }
      : {}),
  };
}

type AlertChannelDocument = NonNullable<NonNullable<ConfigDocument['alerts']>['channels']>[string];

/**
 * One channel with its secrets passed through `transform`: a webhook's signing secret and header values, a chat
 * service's incoming-webhook URL (the URL is the credential), PagerDuty's routing key, the SMTP password.
 */
export function alertChannelSecrets<T extends AlertChannelDocument>(channel: T, transform: (value: string) => string): T {
  switch (channel.type) {
    case 'webhook':
      return {
        ...channel,
        ...(channel.secret ? { secret: transform(channel.secret) } : {}),
        ...(channel.headers ? { headers: Object.fromEntries(Object.entries(channel.headers).map(([header, value]) => [header, transform(value)])) } : {}),
      };
    case 'slack':
    case 'teams':
    case 'discord':
      return { ...channel, url: transform(channel.url) };
    case 'pagerduty':
      return { ...channel, routing_key: transform(channel.routing_key) };
    case 'email':
      return { ...channel, ...(channel.password ? { password: transform(channel.password) } : {}) };
  }
}

/** The alerts section with its channels' secrets passed through `transform`. */
function alertSecrets(alerts: ConfigDocument['alerts'], transform: (value: string) => string): ConfigDocument['alerts'] {
  if (!alerts?.channels) return alerts;
  const channels: NonNullable<NonNullable<ConfigDocument['alerts']>['channels']> = {};
  for (const [name, channel] of Object.entries(alerts.channels)) channels[name] = alertChannelSecrets(channel, transform);
  return { ...alerts, channels };
}

/** The mcp section with its servers' secrets (HTTP token and header values, stdio env values) passed through `transform`. */
function mcpSecrets(mcp: ConfigDocument['mcp'], transform: (value: string) => string): ConfigDocument['mcp'] {
  if (!mcp?.servers) return mcp;
  const servers: NonNullable<NonNullable<ConfigDocument['mcp']>['servers']> = {};
  const map = (values: Record<string, string>) => Object.fromEntries(Object.entries(values).map(([name, value]) => [name, transform(value)]));
  for (const [name, server] of Object.entries(mcp.servers)) {
    servers[name] =
      server.type === 'stdio'
        ? { ...server, ...(server.env ? { env: map(server.env) } : {}) }
        : { ...server, ...(server.token ? { token: transform(server.token) } : {}), ...(server.headers ? { headers: map(server.headers) } : {}) };
  }
  return { ...mcp, servers };
}

/**
 * A config document with every secret masked, for the audit log and the API. `pluginSecrets` says which plugin
 * options are secret (the plugins declare them; see plugin-secrets.ts).
 */
export function maskDocument(document: ConfigDocument, pluginSecrets: PluginSecrets = NO_PLUGIN_SECRETS): ConfigDocument {
  const providers: NonNullable<ConfigDocument['providers']> = {};
  for (const [name, provider] of Object.entries(document.providers ?? {})) {
    providers[name] = {
      ...provider,
      ...(provider.base_url ? { base_url: maskUrl(provider.base_url) } : {}),
      ...(provider.api_key ? { api_key: maskSecret(provider.api_key) } : {}),
      ...(provider.auth ? { auth: maskedAuth(provider.auth) } : {}),
      ...(provider.keys ? { keys: provider.keys.map((key) => ({ ...key, value: maskSecret(key.value) })) } : {}),
      ...(provider.headers ? { headers: maskHeaders(provider.headers) } : {}),
    };
  }
  const proxy = document.settings?.network?.proxy;
  // A proxy's `user:password@` is a credential too (the file's network section is never stored, only audited).
  const masked = settingsSecrets(proxy ? { ...document.settings, network: { ...document.settings?.network, proxy: maskUrl(proxy) } } : document.settings, maskSecret);
  // A collector's URL may carry its credential (user:password, a token in the query).
  const endpoint = masked?.tracing?.endpoint;
  const settings = masked && endpoint ? { ...masked, tracing: { ...masked.tracing, endpoint: maskWebhookUrl(endpoint) } } : masked;
  const alerts = maskWebhookUrls(alertSecrets(document.alerts, maskSecret));
  const mcp = maskMcpUrls(mcpSecrets(document.mcp, maskSecret));
  const plugins = document.plugins ? maskPluginEntries(document.plugins, pluginSecrets) : undefined;
  return {
    ...document,
    ...(document.providers ? { providers } : {}),
    ...(settings ? { settings } : {}),
    ...(alerts ? { alerts } : {}),
    ...(mcp ? { mcp } : {}),
    ...(plugins ? { plugins } : {}),
  };
}

/**
 * The mcp section with its HTTP servers' URLs masked for display (see maskWebhookUrl), and the credentials in its
 * stdio servers' arguments (a database URL's password, `--api-key <value>`: see mcp-arg-secrets.ts). Written back
 * as read, they stand for the stored ones (see unmask.ts, which masks the stored item to compare).
 */
function maskMcpUrls(mcp: ConfigDocument['mcp']): ConfigDocument['mcp'] {
  if (!mcp?.servers) return mcp;
  const servers: NonNullable<NonNullable<ConfigDocument['mcp']>['servers']> = {};
  for (const [name, server] of Object.entries(mcp.servers)) {
    if (server.type === 'http') servers[name] = { ...server, url: maskWebhookUrl(server.url) };
    else servers[name] = server.args ? { ...server, args: maskArgs(server.args, maskWebhookUrl) } : server;
  }
  return { ...mcp, servers };
}

/** The alerts section with its webhooks' and PagerDuty endpoints' URLs masked for display (see maskWebhookUrl). */
function maskWebhookUrls(alerts: ConfigDocument['alerts']): ConfigDocument['alerts'] {
  if (!alerts?.channels) return alerts;
  const channels: NonNullable<NonNullable<ConfigDocument['alerts']>['channels']> = {};
  for (const [name, channel] of Object.entries(alerts.channels)) {
    // A PagerDuty channel's own endpoint (a relay, an EU host) can carry a credential as well as a webhook's can.
    if (channel.type === 'webhook') channels[name] = { ...channel, url: maskWebhookUrl(channel.url) };
    else if (channel.type === 'pagerduty' && channel.url !== undefined) channels[name] = { ...channel, url: maskWebhookUrl(channel.url) };
    else channels[name] = channel;
  }
  return { ...alerts, channels };
}

/**
 * Applies `transform` to every secret in a document (keys, credential headers, plugins' secret options) to seal or
 * unseal it for storage. `pluginSecret` says which plugin option strings are secret; none without it.
 */
export function mapSecrets(
  document: ConfigDocument,
  transform: (value: string) => string,
  pluginSecret: (name: string, path: readonly string[], value: string) => boolean = () => false,
): ConfigDocument {
  const providers: NonNullable<ConfigDocument['providers']> = {};
  for (const [name, provider] of Object.entries(document.providers ?? {})) {
    const headers: Record<string, string> = {};
    for (const [header, value] of Object.entries(provider.headers ?? {})) headers[header] = isSensitiveHeader(header) ? transform(value) : value;
    providers[name] = {
      ...provider,
      ...(provider.api_key ? { api_key: transform(provider.api_key) } : {}),
      ...(provider.auth?.type === 'entra' && provider.auth.client_secret !== undefined ? { auth: { ...provider.auth, client_secret: transform(provider.auth.client_secret) } } : {}),
      ...(provider.keys ? { keys: provider.keys.map((key) => ({ ...key, value: transform(key.value) })) } : {}),
      ...(provider.headers ? { headers } : {}),
    };
  }
  const settings = settingsSecrets(document.settings, transform);
  const alerts = alertSecrets(document.alerts, transform);
  const mcp = mcpSecrets(document.mcp, transform);
  const plugins = document.plugins ? mapPluginSecrets(document.plugins, pluginSecret, transform) : undefined;
  return {
    ...document,
    ...(document.providers ? { providers } : {}),
    ...(settings ? { settings } : {}),
    ...(alerts ? { alerts } : {}),
    ...(mcp ? { mcp } : {}),
    ...(plugins ? { plugins } : {}),
  };
}
