import type { RoutingRuleConfig } from '../core/config.js';
import { modelAllowed } from './model-patterns.js';
import { valueText } from '../core/quote-input.js';

/** What a rule may look at. Expensive facts are functions, computed only when a rule asks. */
export interface RuleFacts {
  /** What the request asks for: a rule is for one kind (chat unless it says `operation: embeddings`). */
  operation: 'chat' | 'embeddings';
  model: string;
  key: { id: string; name: string; metadata: Record<string, unknown> } | null;
  team: { id: string; name: string } | null;
  /** The request's own `metadata` object, if any. */
  metadata: Record<string, unknown> | null;
  estimatedTokens(): number;
  /** Percent of the period's budget spent; null without a budget. */
  keyBudgetUsedPct(): number | null;
  teamBudgetUsedPct(): number | null;
  /** Requests per second a `<provider>/<model>` served lately. */
  targetRps(label: string): number;
}

function list(value: string | string[] | undefined): string[] | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? value : [value];
}

function matchesMetadata(wanted: Record<string, string | number | boolean>, facts: RuleFacts): boolean {
  for (const [name, value] of Object.entries(wanted)) {
    const own = facts.metadata?.[name] ?? facts.key?.metadata[name];
    // Metadata arrives as JSON: "1" and 1 are the same wish.
    if (own === undefined || valueText(own) !== valueText(value)) return false;
  }
  return true;
}

/** Whether every condition of a rule holds; conditions are checked cheapest first. */
export function ruleMatches(rule: RoutingRuleConfig, facts: RuleFacts): boolean {
  const when = rule.when;
  // A rule written for chat (`route_to` a chat model or route) must not send an embeddings request there, nor the
  // reverse: an empty `when` or a key's metadata matched both, and an embeddings batch went to a chat model.
  if ((when.operation ?? 'chat') !== facts.operation) return false;
  const models = list(when.model);
  if (models && !modelAllowed(models, facts.model)) return false;
  const keys = list(when.key);
  if (keys && !(facts.key && (keys.includes(facts.key.id) || keys.includes(facts.key.name)))) return false;
  const teams = list(when.team);
  if (teams && !(facts.team && (teams.includes(facts.team.id) || teams.includes(facts.team.name)))) return false;
  if (when.metadata && !matchesMetadata(when.metadata, facts)) return false;
  if (when.key_budget_used_pct_gte !== undefined) {
    const used = facts.keyBudgetUsedPct();
    if (used === null || used < when.key_budget_used_pct_gte) return false;
  }
  if (when.team_budget_used_pct_gte !== undefined) {
    const used = facts.teamBudgetUsedPct();
    if (used === null || used < when.team_budget_used_pct_gte) return false;
  }
  if (when.target_rps_gte && facts.targetRps(when.target_rps_gte.target) < when.target_rps_gte.rps) return false;
  if (when.estimated_tokens_gte !== undefined || when.estimated_tokens_lt !== undefined) {
    const tokens = facts.estimatedTokens();
    if (when.estimated_tokens_gte !== undefined && tokens < when.estimated_tokens_gte) return false;
    if (when.estimated_tokens_lt !== undefined && tokens >= when.estimated_tokens_lt) return false;
  }
  return true;
}

/**
 * The first rule whose conditions hold, with its position (rules without a name are known by it). That rule decides,
 * even when its `route_to` is the model the request named: the request then stays where it was (a rule that keeps a
 * team on gpt-4o ahead of one that moves `openai/*` to gpt-4o-mini), rather than falling through to later rules.
 */
export function firstMatchingRule(rules: readonly RoutingRuleConfig[], facts: RuleFacts): { rule: RoutingRuleConfig; name: string } | null {
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i] as RoutingRuleConfig;
    if (ruleMatches(rule, facts)) return { rule, name: rule.name ?? `rule-${i}` };
  }
  return null;
}
