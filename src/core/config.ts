/**
 * The running configuration as every layer reads it: one immutable, resolved version per change. Declared here,
 * by hand, so that plugins and every folder share one vocabulary; `src/config/` builds values of these types from
 * the zod schemas (which check at compile time that they agree with the shapes below).
 */
import type { ResolvedProvider, UpstreamTimeouts } from './provider.js';

/** Where a config item came from, highest precedence first. */
export type ConfigSource = 'api' | 'file' | 'env' | 'builtin';

/** USD per million tokens, as providers publish prices. */
export interface PriceConfig {
  input_per_mtok: number;
  output_per_mtok: number;
  /** Cache reads; defaults to the input price. */
  cached_input_per_mtok?: number | undefined;
  /** Cache writes; defaults to the input price. */
  cache_write_per_mtok?: number | undefined;
  /** Writes to Anthropic's 1-hour cache; defaults to the cache-write price. */
  cache_write_1h_per_mtok?: number | undefined;
  /** USD per 1,000 web searches the provider ran (Anthropic's server_tool_use, Perplexity's searches); defaults to 0. */
  web_search_per_1k?: number | undefined;
}

export interface RetryConfig {
  max_attempts?: number | undefined;
  initial_delay_ms?: number | undefined;
  max_delay_ms?: number | undefined;
  deadline_ms?: number | undefined;
}

export interface BreakerConfig {
  enabled?: boolean | undefined;
  consecutive_failures?: number | undefined;
  failure_rate?: number | undefined;
  window_ms?: number | undefined;
  min_requests?: number | undefined;
  cooldown_ms?: number | undefined;
  half_open_requests?: number | undefined;
}

/** A route's (or `settings.routing`'s) policy fields as written. */
export interface RoutingPolicyConfig {
  retry?: RetryConfig | undefined;
  breaker?: BreakerConfig | undefined;
  adaptive?: boolean | undefined;
  fallback_on_client_errors?: boolean | undefined;
}

type OneOrMany = string | string[];

/** A usage-based routing rule: when every condition holds, the request goes to `route_to`. */
export interface RoutingRuleConfig {
  name?: string | undefined;
  when: {
    operation?: 'chat' | 'embeddings' | undefined;
    model?: OneOrMany | undefined;
    key?: OneOrMany | undefined;
    team?: OneOrMany | undefined;
    metadata?: Record<string, string | number | boolean> | undefined;
    estimated_tokens_gte?: number | undefined;
    estimated_tokens_lt?: number | undefined;
    key_budget_used_pct_gte?: number | undefined;
    team_budget_used_pct_gte?: number | undefined;
    target_rps_gte?: { target: string; rps: number } | undefined;
  };
  route_to: string;
}

/** Where a plugin goes: after and/or before named stages or plugins. */
export interface PluginPlacementConfig {
  after?: string | undefined;
  before?: string | undefined;
}

/** One custom plugin as configured. */
export interface PluginEntryConfig {
  name: string;
  path?: string | undefined;
  package?: string | undefined;
  options?: unknown;
  placement?: PluginPlacementConfig | undefined;
  optional?: boolean | undefined;
  timeout_ms?: number | undefined;
  /** How long importing the plugin and its `init` may take (default 30000 ms). */
  init_timeout_ms?: number | undefined;
  /** `all` (default) runs for every request; `listed` only where a route, key or team lists the plugin. */
  apply?: 'all' | 'listed' | undefined;
}

/** What the response cache does: nothing, record what would have hit, or answer from the cache. */
export type CacheMode = 'off' | 'shadow' | 'on';

/** Whose requests may share cached answers (always also separated by model or route, system prompt and tools). */
export type CacheScope = 'team' | 'key' | 'global';

/**
 * The cache's settings as written: at the top level of the config, and as overrides on a route, a virtual key
 * or a team (each field overrides the one above; unset fields inherit).
 */
export interface CachePolicyConfig {
  mode?: CacheMode | undefined;
  ttl_seconds?: number | undefined;
  scope?: CacheScope | undefined;
  /** Cache requests sampled with temperature > 0 (or top_p < 1); off by default: such a client asked for variety. */
  cache_sampled?: boolean | undefined;
  semantic?:
    | {
        enabled?: boolean | undefined;
        /** Cosine similarity at or above which a stored question counts as the same (and passes the lexical check). */
        threshold?: number | undefined;
      }
    | undefined;
}

/** The top-level cache section: the policy plus what only the whole cache has. */
export interface CacheConfig {
  mode?: CacheMode | undefined;
  ttl_seconds?: number | undefined;
  scope?: CacheScope | undefined;
  cache_sampled?: boolean | undefined;
  /** Most entries kept; the least recently used go first. */
  max_entries?: number | undefined;
  /** Most bytes the entries may take in the store; the least recently used go first past it. */
  max_bytes?: number | undefined;
  semantic?:
    | {
        enabled?: boolean | undefined;
        threshold?: number | undefined;
        /** `use-lite` (built in, the default), `onnx:<model>` or `<provider>/<model>`. */
        embedder?: string | undefined;
        /** Folder of ONNX sentence models (default `<data_dir>/models`). */
        models_dir?: string | undefined;
      }
    | undefined;
}

/**
 * A guardrail rule as written: the detection library's kinds (email, phone, payment_card, iban, national_id, secret,
 * prompt_injection, keyword, regex) and the two the stage runs itself (moderation, json_schema). The config schema
 * checks each kind's options; stages read them through the library's own types.
 */
export interface GuardrailRuleConfig {
  name: string;
  kind: string;
  action: 'block' | 'redact' | 'flag';
  applies_to?: 'input' | 'output' | 'both' | undefined;
  [option: string]: unknown;
}

/** One MCP server as configured: a command tollgate starts (stdio), or a streamable HTTP endpoint. */
export type McpServerConfig =
  | { type: 'stdio'; command: string; args?: string[] | undefined; env?: Record<string, string> | undefined; cwd?: string | undefined; disabled?: boolean | undefined; max_answer_bytes?: number | undefined }
  | { type: 'http'; url: string; headers?: Record<string, string> | undefined; token?: string | undefined; disabled?: boolean | undefined; max_answer_bytes?: number | undefined };

/** The top-level `mcp` section as written. */
export interface McpConfig {
  servers?: Record<string, McpServerConfig> | undefined;
  /** Longest a tool call may take before the model gets a tool error (default 30000). */
  call_timeout_ms?: number | undefined;
  /** A tool result is cut to this many bytes (default 65536). */
  max_result_bytes?: number | undefined;
  /** The most of one server's answer tollgate reads; a tool call answered with more fails (default 10 MiB). */
  max_answer_bytes?: number | undefined;
  /** Agent mode's bounds: model turns and total time. */
  agent?: { max_steps?: number | undefined; time_budget_ms?: number | undefined } | undefined;
}

/**
 * MCP for a route's, a team's or a key's requests: servers whose tools are added to every request (`servers`),
 * the allow-list of servers and tools (`allow`: `server`, `server__tool`, `server__*`; absent: every server), the
 * mode, and a rate limit on tool calls (keys and teams).
 */
export interface McpPolicyConfig {
  servers?: string[] | undefined;
  allow?: string[] | undefined;
  mode?: 'client' | 'auto' | undefined;
  tool_calls_per_minute?: number | undefined;
}

/** A resolved MCP server: its secrets read. */
export type McpServerRuntime = McpServerConfig & { name: string };

/** The `mcp` section for one config version. */
export interface McpSettings {
  servers: ReadonlyMap<string, McpServerRuntime>;
  callTimeoutMs: number;
  maxResultBytes: number;
  maxAnswerBytes: number;
  maxSteps: number;
  timeBudgetMs: number;
}

/** What a route, a virtual key or a team changes of the top-level guardrails: rules added, rules left out by name. */
export interface GuardrailsOverride {
  rules?: GuardrailRuleConfig[] | undefined;
  /** Names of rules from the levels above (top level, route, team) not applied here. */
  skip?: string[] | undefined;
  output_block?: 'content_filter' | 'error' | undefined;
}

/** The top-level guardrails section as written. */
export interface GuardrailsConfig {
  rules?: GuardrailRuleConfig[] | undefined;
  /** A blocked answer ends with `finish_reason: content_filter` (default) or fails with a `guardrail_blocked` error. */
  output_block?: 'content_filter' | 'error' | undefined;
  /** Characters a stream guard holds back (default: what the rules need, at most 256). */
  look_behind_chars?: number | undefined;
}

/** The top-level guardrails for one config version. */
export interface GuardrailsSettings {
  rules: readonly GuardrailRuleConfig[];
  outputBlock: 'content_filter' | 'error';
  lookBehind: number | null;
}

/** How bad an alert is: passed to every channel as it is. */
export type AlertSeverity = 'info' | 'warning' | 'critical';

/** Retries of one channel's deliveries: exponential backoff from `initial_delay_ms`, capped at `max_delay_ms`. */
export interface AlertRetryConfig {
  max_attempts?: number | undefined;
  initial_delay_ms?: number | undefined;
  max_delay_ms?: number | undefined;
}

/** A generic webhook: the alert as JSON, signed with HMAC-SHA256 when a secret is set. */
export interface WebhookChannelConfig {
  type: 'webhook';
  url: string;
  /** The signing secret, or a reference (`env:NAME`, `file:/path`) in the config file. */
  secret?: string | undefined;
  headers?: Record<string, string> | undefined;
  timeout_ms?: number | undefined;
  retry?: AlertRetryConfig | undefined;
}

/**
 * A chat service's incoming webhook (Slack, Microsoft Teams, Discord), sent the service's own message format.
 * The URL is the credential: a secret, or a reference (`env:NAME`, `file:/path`) in the config file.
 */
export interface ChatChannelConfig {
  type: 'slack' | 'teams' | 'discord';
  url: string;
  timeout_ms?: number | undefined;
  retry?: AlertRetryConfig | undefined;
}

/** PagerDuty Events API v2: a `trigger` for a firing alert, a `resolve` with the same dedup key when it clears. */
export interface PagerDutyChannelConfig {
  type: 'pagerduty';
  /** The integration's routing key, or a reference (`env:NAME`, `file:/path`) in the config file. */
  routing_key: string;
  /** The events endpoint (default `https://events.pagerduty.com/v2/enqueue`). */
  url?: string | undefined;
  /** The event's `source` (default this machine's host name). */
  source?: string | undefined;
  timeout_ms?: number | undefined;
  retry?: AlertRetryConfig | undefined;
}

/** Email over SMTP: a plain-text and an HTML part. */
export interface EmailChannelConfig {
  type: 'email';
  host: string;
  /** Default 465 with `secure`, else 587. */
  port?: number | undefined;
  /** Implicit TLS from the first byte (port 465); default false. */
  secure?: boolean | undefined;
  /** Without `secure`: upgrade with STARTTLS always (`required`, the default), when offered, or never. */
  starttls?: 'required' | 'opportunistic' | 'off' | undefined;
  username?: string | undefined;
  /** The SMTP password, or a reference (`env:NAME`, `file:/path`) in the config file. */
  password?: string | undefined;
  from: string;
  to: string[];
  /** Starts every subject (default `[tollgate]`). */
  subject_prefix?: string | undefined;
  /** Refuse a server certificate that does not verify (default true). */
  tls_reject_unauthorized?: boolean | undefined;
  timeout_ms?: number | undefined;
  retry?: AlertRetryConfig | undefined;
}

export type AlertChannelConfig = WebhookChannelConfig | ChatChannelConfig | PagerDutyChannelConfig | EmailChannelConfig;

/** What every alert rule has, whatever it watches. */
interface AlertRuleBase {
  /** Unique among the rules; the `rule` field of every notification. */
  name: string;
  severity?: AlertSeverity | undefined;
  /** After a notification, the same rule and subject notify again only this long later. */
  cooldown_ms?: number | undefined;
  /** Channel names; every channel when absent. */
  channels?: string[] | undefined;
}

/** A key's or team's spend crosses a share of its budget (from `budget.threshold`). */
export interface BudgetAlertRuleConfig extends AlertRuleBase {
  kind: 'budget';
  /** Which of the crossings (50, 80, 100 percent) alert; all when absent. */
  thresholds?: Array<50 | 80 | 100> | undefined;
  /** Key budgets, team budgets, or both (absent). */
  account?: 'key' | 'team' | undefined;
}

/** A target's circuit breaker opened (resolved when it closes again). */
export interface BreakerAlertRuleConfig extends AlertRuleBase {
  kind: 'breaker_opened';
  /** Only targets of these providers; all when absent. */
  providers?: string[] | undefined;
}

/** A provider's (or one of its models') upstream attempts failed more than `threshold_pct` percent within the window. */
export interface ErrorRateAlertRuleConfig extends AlertRuleBase {
  kind: 'error_rate';
  threshold_pct: number;
  window_ms?: number | undefined;
  min_requests?: number | undefined;
  providers?: string[] | undefined;
  /** One alert per provider (default), or per target model (`<provider>/<model>`). */
  per?: 'provider' | 'model' | undefined;
}

/**
 * A provider's answered requests had a p95 over `threshold_ms` for at least `for_ms`: of their whole duration
 * (`latency_p95`), or of the time to their first token, streams only (`ttft_p95`).
 */
export interface LatencyAlertRuleConfig extends AlertRuleBase {
  kind: 'latency_p95' | 'ttft_p95';
  threshold_ms: number;
  window_ms?: number | undefined;
  for_ms?: number | undefined;
  min_requests?: number | undefined;
  providers?: string[] | undefined;
}

/** Requests to a route failed after every target of their plan (primary and fallbacks) failed or was unavailable. */
export interface FallbacksExhaustedAlertRuleConfig extends AlertRuleBase {
  kind: 'fallbacks_exhausted';
  /** Fires when at least this many such failures fall in the window (default 1). */
  min_count?: number | undefined;
  window_ms?: number | undefined;
  /** Only these routes; all when absent. */
  routes?: string[] | undefined;
}

/** More than `threshold_pct` percent of a route's requests ended with a 5xx status within the window. */
export interface ServerErrorsAlertRuleConfig extends AlertRuleBase {
  kind: 'server_errors';
  threshold_pct: number;
  window_ms?: number | undefined;
  min_requests?: number | undefined;
  routes?: string[] | undefined;
}

export type AlertRuleConfig =
  | BudgetAlertRuleConfig
  | BreakerAlertRuleConfig
  | ErrorRateAlertRuleConfig
  | LatencyAlertRuleConfig
  | FallbacksExhaustedAlertRuleConfig
  | ServerErrorsAlertRuleConfig;

/** The top-level `alerts` section as written. */
export interface AlertsConfig {
  channels?: Record<string, AlertChannelConfig> | undefined;
  rules?: AlertRuleConfig[] | undefined;
  /** Most notifications waiting for delivery; past it a new one is recorded as failed (`queue_full`). */
  max_queue?: number | undefined;
}

/** What every resolved channel has: its name and its delivery policy. */
interface AlertChannelRuntimeBase {
  name: string;
  timeoutMs: number;
  maxAttempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

/** A webhook resolved for one config version: its secret read, its retry policy filled in. */
export interface WebhookChannelRuntime extends AlertChannelRuntimeBase {
  type: 'webhook';
  url: string;
  secret: string | null;
  headers: Readonly<Record<string, string>>;
}

export interface ChatChannelRuntime extends AlertChannelRuntimeBase {
  type: 'slack' | 'teams' | 'discord';
  /** The incoming-webhook URL, its reference read. */
  url: string;
}

export interface PagerDutyChannelRuntime extends AlertChannelRuntimeBase {
  type: 'pagerduty';
  url: string;
  routingKey: string;
  source: string;
}

export interface EmailChannelRuntime extends AlertChannelRuntimeBase {
  type: 'email';
  host: string;
  port: number;
  secure: boolean;
  starttls: 'required' | 'opportunistic' | 'off';
  username: string | null;
  password: string | null;
  from: string;
  to: readonly string[];
  subjectPrefix: string;
  tlsRejectUnauthorized: boolean;
}

/** A channel resolved for one config version: its secrets read, its retry policy filled in. */
export type AlertChannelRuntime = WebhookChannelRuntime | ChatChannelRuntime | PagerDutyChannelRuntime | EmailChannelRuntime;

/** A rule with its defaults filled in and its channels checked. */
export type AlertRuleRuntime = AlertRuleConfig & { severity: AlertSeverity; cooldownMs: number; channels: string[] };

export interface AlertsRuntime {
  channels: ReadonlyMap<string, AlertChannelRuntime>;
  rules: readonly AlertRuleRuntime[];
  maxQueue: number;
}

/** The effective cache policy of one request, every field resolved. */
export interface CachePolicy {
  mode: CacheMode;
  ttlSeconds: number;
  scope: CacheScope;
  cacheSampled: boolean;
  semantic: boolean;
  threshold: number;
}

/** The whole cache's settings for one config version. */
export interface CacheSettings {
  /** The policy before any route, key or team override. */
  policy: CachePolicy;
  maxEntries: number;
  /** Most bytes the entries may take in the store (their databases' pages); null: no limit but maxEntries. */
  maxBytes: number | null;
  /** `use-lite`, `onnx:<model>` or `<provider>/<model>`. */
  embedder: string;
  /** Where `onnx:<model>` embedders are found (`<models_dir>/<model>/`). */
  modelsDir: string;
}

/** How a request survives failure: retries, breakers, adaptive weights. Resolved once per config version. */
export interface RetryPolicy {
  /** Upstream calls per request, all targets together; null = 3, or the number of candidates when larger. */
  maxAttempts: number | null;
  initialDelayMs: number;
  maxDelayMs: number;
  deadlineMs: number;
}

export interface BreakerPolicy {
  enabled: boolean;
  consecutiveFailures: number;
  failureRate: number;
  windowMs: number;
  minRequests: number;
  cooldownMs: number;
  halfOpenRequests: number;
}

export interface RoutingPolicy {
  retry: RetryPolicy;
  breaker: BreakerPolicy;
  adaptive: boolean;
  fallbackOnClientErrors: boolean;
}

export interface ProviderKey {
  id: string;
  /** The resolved secret. */
  value: string;
  /** The value as configured: a literal, or a reference (`env:NAME`, `file:/path`). Used for masking. */
  raw: string;
  weight: number;
  /** Models the key may serve; null means all. */
  models: string[] | null;
  /** Out of rotation: kept and shown, never used. */
  disabled: boolean;
  source: ConfigSource;
}

export interface ProviderRuntime extends ResolvedProvider {
  /** The headers as configured, `env:`/`file:` references unread: what the API shows (`headers` holds what is sent). */
  rawHeaders: Readonly<Record<string, string>>;
  /** `auth` as configured (the client secret as written, a reference unread): what the API shows, masked. */
  rawAuth: Readonly<Record<string, string>> | null;
  keys: ProviderKey[];
  /** Extra models to list beside the catalogue. */
  models: string[];
  /** The highest-precedence source that defines the provider. */
  source: ConfigSource;
  /** Whether a request needs a credential; custom instances without keys are taken to be open servers. */
  keyRequired: boolean;
  /** Operator prices by model name (`*` for any model the catalogue does not know). */
  prices: ReadonlyMap<string, PriceConfig>;
}

export interface RouteRuntime {
  name: string;
  targets: Array<{ model: string; weight: number }>;
  fallbacks: string[];
  price: PriceConfig | null;
  /** Retries, breakers and balancing for this route: its own settings over `settings.routing`. */
  policy: RoutingPolicy;
  /** The route's own policy fields as written, for the API view (so what is read can be written back). */
  policyConfig: RoutingPolicyConfig;
  /** Plugins (applied `listed`) this route turns on for the requests it serves. */
  plugins: readonly string[];
  /** The route's cache overrides (null: the top-level policy applies). */
  cache: CachePolicyConfig | null;
  /** The route's guardrail changes (null: the top-level guardrails apply as they are). */
  guardrails: GuardrailsOverride | null;
  /** MCP tools for the route's requests (null: only what the request or its key asks for). */
  mcp: McpPolicyConfig | null;
  source: ConfigSource;
}

export interface Settings {
  host: string;
  port: number;
  dataDir: string;
  maxBodyBytes: number;
  upstreamTimeouts: UpstreamTimeouts;
  shutdownGraceMs: number;
  /** A streamed answer silent this long gets a keep-alive (its dialect's ping or an SSE comment); 0: never. */
  streamKeepaliveMs: number;
  /** Receiving a whole request (headers and body) may take this long; applied when the server starts. */
  requestTimeoutMs: number;
  /** Receiving the request headers may take this long; applied when the server starts. */
  headersTimeoutMs: number;
  logLevel: string;
  logRetentionDays: number;
  /** Most request-log entries kept; null for no limit. */
  logMaxEntries: number | null;
  /** Most bytes the request log's pages take (its entries, kept bodies and indexes); null for no limit. */
  logMaxBytes: number | null;
  /** Days a stored Responses API answer is kept (previous_response_id, GET /v1/responses/{id}). */
  responseRetentionDays: number;
  /** Most stored Responses API answers kept. */
  responseMaxEntries: number;
  /** Most bytes the stored Responses API answers take (their records in the store). */
  responseMaxBytes: number;
  /** Largest upstream body (non-streamed) or stream event read; providers may set their own. */
  maxResponseBytes: number;
  /** Requests without a virtual key are refused (401). */
  requireVirtualKey: boolean;
  /** Who may call without a virtual key: clients on this machine only, or anyone. */
  anonymousAccess: 'loopback' | 'any';
  /** Proxies whose X-Forwarded-For is believed (normalised addresses). */
  trustedProxies: ReadonlySet<string>;
  /** The one header the trusted proxies name the client in; null reads them all (see http/client-address.ts). */
  clientIpHeader: ClientIpHeader | null;
  /** Client headers forwarded to every provider (lower-case names), besides each vendor's own. */
  forwardHeaders: readonly string[];
  /** The provider's rate-limit headers reach the client (see providers/upstream-rate-limits.ts). */
  upstreamRateLimitHeaders: boolean;
  /** The routing policy of direct `<provider>/<model>` requests and the base of every route's. */
  routing: RoutingPolicy;
  metrics: MetricsSettings;
  tracing: TracingSettings;
  logBodies: LogBodySettings;
  /** How outbound HTTP(S) calls leave the machine: proxies and extra trusted CAs. */
  network: NetworkSettings;
}

/**
 * Proxies and certificate authorities for every outbound HTTP(S) call (providers, the OTLP collector, alert
 * webhooks, MCP servers): from `settings.network` in the file, else the standard environment variables.
 */
export interface NetworkSettings {
  /** Proxy URL for http:// destinations; null goes direct. */
  httpProxy: string | null;
  /** Proxy URL for https:// destinations; null goes direct. */
  httpsProxy: string | null;
  /** Destinations reached without the proxy, in NO_PROXY's syntax (comma-separated; `*` for all); '' for none. */
  noProxy: string;
  /** The PEM bundle whose certificates are trusted besides the default roots; null for none. */
  caFile: string | null;
  /** That bundle's certificates (PEM), read when the config was applied. */
  extraCa: string | null;
}

export interface MetricsSettings {
  /** GET /metrics answers (else 404). */
  enabled: boolean;
  /** When set, /metrics requires `Authorization: Bearer <token>`; never shown by the API. */
  bearerToken: string | null;
}

export interface TracingSettings {
  /** The OTLP/HTTP traces URL; null turns tracing off. */
  endpoint: string | null;
  headers: Readonly<Record<string, string>>;
  serviceName: string;
  /** More resource attributes for the spans (OTEL_RESOURCE_ATTRIBUTES); `service.name` is serviceName's. */
  resourceAttributes: Readonly<Record<string, string>>;
  /** Share of new root traces sampled, 0..1. */
  sampleRatio: number;
  /**
   * Whether a request's parent in its `traceparent` decides for it (OTEL_TRACES_SAMPLER's `parentbased_` forms, the
   * default; the ratio is then for new traces only). False for `always_on`, `always_off` and `traceidratio`
   * themselves, which decide on every trace alone. Absent: true.
   */
  followParent?: boolean;
  /** OTLP/HTTP encoding. */
  protocol: 'http/protobuf' | 'http/json';
  /** Whether each export's body is gzipped (Content-Encoding: gzip). Absent: none. */
  compression?: 'none' | 'gzip';
}

export interface LogBodySettings {
  enabled: boolean;
  maxBytes: number;
  /** Operator patterns (regular expressions, already checked to compile) replaced by [REDACTED]. */
  redact: readonly string[];
}

/** A header a reverse proxy names the client in (lower-case). */
export type ClientIpHeader = 'x-forwarded-for' | 'forwarded' | 'x-real-ip';

/** Something in a valid config that will not work as written (a fallback to a provider with no key, say). */
export interface ConfigWarning {
  /** The field, e.g. `routes.chat.fallbacks.0`. */
  field: string;
  message: string;
}

/** The last config file save that was rejected: the running config stayed as it was. */
export interface FileRejection {
  file: string;
  /** ISO time of the rejected save. */
  at: string;
  /** Why, in one line (never the file's content). */
  reason: string;
  /** Routes the rejected file defines (when it parsed far enough to tell), for an honest 404. */
  routes: string[];
}

/**
 * The live state of the config file, shared by every config version (a rejected save makes no new version):
 * the one mutable part, owned and updated by the config service.
 */
export interface ConfigFileStatus {
  rejection: FileRejection | null;
}

/** One immutable, fully resolved configuration. Everything per request reads from here, nothing re-parses. */
export interface RuntimeConfig {
  version: number;
  settings: Settings;
  providers: ReadonlyMap<string, ProviderRuntime>;
  routes: ReadonlyMap<string, RouteRuntime>;
  /** Usage-based routing rules, in order; the first that matches picks the route. */
  routingRules: readonly RoutingRuleConfig[];
  /**
   * Custom plugins, in order, as configured (the API's list replaces the file's as a whole). Loaded, checked and
   * compiled into the pipeline by the gateway before this version becomes current.
   */
  plugins: readonly PluginEntryConfig[];
  /**
   * Each plugin entry's options (by its name) with their `env:`/`file:` references read: what the plugin is given.
   * `plugins` keeps them as written, which is what is shown.
   */
  pluginOptions: ReadonlyMap<string, unknown>;
  /** The response cache: its top-level policy and limits. */
  cache: CacheSettings;
  /** Guardrails every request gets (routes, keys and teams add and skip rules). */
  guardrails: GuardrailsSettings;
  /** MCP servers and how their tools are called. */
  mcp: McpSettings;
  /** Alert rules and the channels they deliver to. */
  alerts: AlertsRuntime;
  /** What will not work as written; shown by `GET /api/config` and logged when the config is applied. */
  warnings: readonly ConfigWarning[];
  /** The config file's live status; set by the config service. */
  fileStatus?: ConfigFileStatus;
}

