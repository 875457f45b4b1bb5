/** The shapes the `/api` endpoints answer, as far as the dashboard reads them (README "Management API"). */

import type { GuardrailsOverride } from './guardrails-api.js';
import type { McpPolicy } from './mcp-api.js';

/** A page of `GET /api/keys?limit=`: `next_after` is the cursor of the next page, null on the last. */
export interface KeyPage<T> {
  object: 'list';
  data: T[];
  has_more: boolean;
  next_after: string | null;
}

export interface List<T> {
  object: 'list';
  data: T[];
  next_before?: string | null;
}

export interface Attempt {
  provider: string;
  model: string;
  status: number | null;
  ok: boolean;
  duration_ms: number | null;
  error_code: string | null;
}

export interface LogRecord {
  id: string;
  at: string;
  dialect: string;
  path: string;
  operation: string;
  key_id: string | null;
  team_id: string | null;
  route: string | null;
  model: string | null;
  provider: string | null;
  upstream_model: string | null;
  attempts: Attempt[];
  fallback: boolean;
  status: number;
  error_type?: string | null;
  error_code?: string | null;
  error_message?: string | null;
  duration_ms: number | null;
  upstream_ms: number | null;
  first_token_ms: number | null;
  overhead_ms: number | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  cache_write_tokens: number | null;
  reasoning_tokens: number | null;
  estimated: boolean;
  cost_usd: number | null;
  priced: boolean;
  stream: boolean;
  cancelled: boolean;
  user: string | null;
  metadata: Record<string, string> | null;
  /** What guardrail rules did, `side:rule:action` (`input:cards:blocked`); absent when none acted. */
  guardrails?: string[] | null;
  /** Its place in write order, the `written_after` cursor log shippers keep; absent on older gateways. */
  write_seq?: number;
}

export type BudgetPeriod = 'daily' | 'weekly' | 'monthly' | 'total';

export interface VirtualKey {
  id: string;
  name: string;
  key_prefix: string;
  team: string | null;
  models: string[];
  budget: number | null;
  budget_period: BudgetPeriod;
  spend: number;
  requests: number;
  rate_limit: number | null;
  tokens_per_minute: number | null;
  expires_at: string | null;
  disabled: boolean;
  /** Rules added and skipped for this key (null when none). */
  guardrails?: GuardrailsOverride | null;
  /** Which MCP tools its callers may use, servers attached, mode, tool-call rate limit (null when none). */
  mcp?: McpPolicy | null;
  total_spend: number;
  total_requests: number;
  /** When a request with the key was last let through (within a minute); null when never. */
  last_used_at?: string | null;
  created_at: string;
}

/** What POST /api/keys answers: the key, plus its secret this once. */
export interface CreatedKey extends VirtualKey {
  key: string;
}

export interface Team {
  id: string;
  name: string;
  budget: number | null;
  budget_period: BudgetPeriod;
  spend: number;
  requests: number;
  rate_limit: number | null;
  /** Rules added and skipped for this team's keys (null when none). */
  guardrails?: GuardrailsOverride | null;
  created_at: string;
}

export type UsageGroupBy = 'key' | 'team' | 'model' | 'provider' | 'route';

export interface UsageNumbers {
  requests: number;
  errors: number;
  spend_usd: number;
  input_tokens: number;
  output_tokens: number;
}

export interface Usage {
  object: 'usage';
  group_by: UsageGroupBy;
  interval: 'hour' | 'day';
  /** The zone days are counted in (`UTC` unless the query named one); older gateways leave it out. */
  tz?: string;
  from: string;
  to: string;
  data: (UsageNumbers & { start: string; group: string })[];
  totals: (UsageNumbers & { group: string })[];
  /** More groups than the answer holds (1,000, fewer when their rows pass 50,000): the rest summed; older gateways leave it out. */
  truncated?: boolean;
  others?: { groups: number; totals: UsageNumbers; data: (UsageNumbers & { start: string })[] };
}

export interface Route {
  name: string;
  targets: { model: string; weight: number }[];
  fallbacks: string[];
  source: string;
}

export interface TargetHealth {
  target: string;
  provider: string;
  model: string;
  key_id: string | null;
  configured_weight: number;
  effective_weight: number;
  share: number;
  breaker: { state: 'closed' | 'open' | 'half_open' | string; reason: string | null; consecutive_failures: number; failure_rate: number };
  health: { success_rate: number; latency_ms: number | null; calls: number; failures: number; in_flight: number; last_error: string | null };
}

export interface RouteHealth {
  name: string;
  route: string | null;
  groups: { name: string; role: string; targets: TargetHealth[] }[];
}
