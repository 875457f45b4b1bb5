import type { CachePolicyConfig, GuardrailsOverride, McpPolicyConfig } from './config.js';
/**
 * Who is calling: virtual keys and teams, with their limits and the spend of the current budget period, as the
 * governance store keeps them (snake_case, like the API). The key secret is never held: only its sha256 hash and
 * a short prefix for recognising it.
 */
export type BudgetPeriod = 'daily' | 'weekly' | 'monthly' | 'total';

/** Usage counters of one budget period. */
export interface PeriodUsage {
  /** USD spent in the current period. */
  spend: number;
  /** Requests made in the current period. */
  requests: number;
  /** Start of the current period (ISO). */
  period_start: string;
  /** When the current period ends and the counters reset (ISO); null for `total`. */
  period_resets_at: string | null;
}

export interface LimitsFields {
  name: string;
  /** USD per period; null means unlimited. */
  budget: number | null;
  budget_period: BudgetPeriod;
  /** Requests per minute; null means unlimited. */
  rate_limit: number | null;
  /** Tokens (prompt + completion) per minute; null means unlimited. */
  tokens_per_minute: number | null;
  metadata: Record<string, unknown>;
  /** Plugins (applied `listed` in the config) turned on for this key's or team's requests; absent in older records. */
  plugins?: string[];
  /** Cache overrides for this key's or team's requests (over the route's and the top level's); absent or null: none. */
  cache?: CachePolicyConfig | null;
  /** Guardrail changes for this key's or team's requests (rules added, rules skipped); absent or null: none. */
  guardrails?: GuardrailsOverride | null;
  /** MCP for this key's or team's requests: servers attached, the allow-list, the mode, a tool-call rate limit. */
  mcp?: McpPolicyConfig | null;
}

export interface TeamRecord extends LimitsFields, PeriodUsage {
  id: string;
  created_at: string;
  updated_at: string;
}

export interface VirtualKeyRecord extends LimitsFields, PeriodUsage {
  id: string;
  /** `<provider>/<model>` entries, `*` patterns allowed; empty means every model. */
  models: string[];
  /** Requests per minute for one model (every call to it, however reached) or one route, beside the key's overall limit. */
  model_rate_limits?: Record<string, number>;
  /** Team id, or null. */
  team: string | null;
  expires_at: string | null;
  disabled: boolean;
  /** sha256 (hex) of the secret. Never leaves the store. */
  key_hash: string;
  /** The first characters of the secret, to recognise a key in lists (`tg-AbCd...`). */
  key_prefix: string;
  created_at: string;
  updated_at: string;
  /** Lifetime totals, across periods. */
  total_spend: number;
  total_requests: number;
  /** When a request with the key was last let through (to the minute); null (or absent, in older records) when never. */
  last_used_at?: string | null;
}

