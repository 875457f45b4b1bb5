import type { ConfigSource } from '../core/config.js';
import type { CachePolicyConfig, GuardrailsOverride, McpPolicyConfig, PriceConfig } from '../core/config.js';
import type { RouteConfig } from './schema.js';

/**
 * What the management API shows of the config: secrets masked, each item tagged with the source it came
 * from. These shapes are the API's contract; extend them, do not break them.
 */

/** Who made a change, for the audit log. Never holds a credential. */
export interface Actor {
  kind: 'admin-key' | 'loopback' | 'file' | 'system';
  /** e.g. the client address, or the file path. */
  id: string;
}

export interface ProviderKeyView {
  id: string;
  /** Masked: the last four characters only, e.g. `****abcd`; references (`env:NAME`, `file:/path`) are shown as written. */
  value: string;
  weight: number;
  models: string[] | null;
  /** Out of rotation (absent when in use). */
  disabled?: boolean;
  source: ConfigSource;
}

export interface ProviderView {
  name: string;
  type: string;
  base_url: string;
  headers: Record<string, string>;
  timeouts: { first_byte_ms: number; total_ms: number; idle_ms: number };
  max_response_bytes: number;
  models: string[];
  region?: string;
  project?: string;
  claude_models?: string[];
  api_version?: string;
  token_url?: string;
  extra_parameters?: string;
  /** The Entra identity (`auth`), its client secret masked. */
  auth?: Record<string, string>;
  /** Operator prices by model name (`*` for any model the catalogue does not know). */
  prices?: Record<string, PriceConfig>;
  keys: ProviderKeyView[];
  /** The highest-precedence source that defines this provider. */
  source: ConfigSource;
}

export interface RouteTargetView {
  model: string;
  weight: number;
}

export interface RouteView extends Pick<RouteConfig, 'retry' | 'breaker' | 'adaptive' | 'fallback_on_client_errors'> {
  name: string;
  targets: RouteTargetView[];
  fallbacks: string[];
  price?: PriceConfig;
  plugins?: string[];
  cache?: CachePolicyConfig;
  guardrails?: GuardrailsOverride;
  mcp?: McpPolicyConfig;
  source: ConfigSource;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: Actor;
  action: string;
  /** What changed, e.g. `providers.openai` or `routes.chat-default`. */
  target: string;
  /** Before and after, secrets masked; null when the item did not exist / was deleted. */
  before: unknown;
  after: unknown;
  version: number;
}
