import { describe, expect, it, vi } from 'vitest';
import type { RoutingRuleConfig } from '../../src/core/config.js';
import { firstMatchingRule, ruleMatches, type RuleFacts } from '../../src/routing/routing-rules.js';

type FactOverrides = Partial<Omit<RuleFacts, 'estimatedTokens' | 'keyBudgetUsedPct' | 'teamBudgetUsedPct' | 'targetRps'>> & {
  tokens?: number;
  keyBudget?: number | null;
  teamBudget?: number | null;
  rps?: Record<string, number>;
};

/** Facts whose expensive parts are spies, so tests can see which were computed. */
function facts(overrides: FactOverrides = {}) {
  const { tokens = 100, keyBudget = null, teamBudget = null, rps = {}, ...rest } = overrides;
  return {
    operation: 'chat' as const,
    model: 'smart',
    key: { id: 'key-1', name: 'backend', metadata: {} },
    team: { id: 'team-1', name: 'search' },
    metadata: null,
    ...rest,
    estimatedTokens: vi.fn(() => tokens),
    keyBudgetUsedPct: vi.fn(() => keyBudget),
    teamBudgetUsedPct: vi.fn(() => teamBudget),
    targetRps: vi.fn((label: string) => rps[label] ?? 0),
  } satisfies RuleFacts;
}

function rule(when: RoutingRuleConfig['when'], route_to = 'cheap', name?: string): RoutingRuleConfig {
  return { ...(name ? { name } : {}), when, route_to };
}

describe('ruleMatches: conditions', () => {
  it('an empty `when` always matches a chat request', () => {
    expect(ruleMatches(rule({}), facts())).toBe(true);
  });

  it('operation: chat unless the rule names embeddings, and never the other kind', () => {
    expect(ruleMatches(rule({}), facts({ operation: 'embeddings' }))).toBe(false);
    expect(ruleMatches(rule({ operation: 'embeddings' }), facts({ operation: 'embeddings' }))).toBe(true);
    expect(ruleMatches(rule({ operation: 'embeddings' }), facts())).toBe(false);
    expect(ruleMatches(rule({ operation: 'chat' }), facts())).toBe(true);
  });

  it('model: exact names, lists and * patterns', () => {
    expect(ruleMatches(rule({ model: 'smart' }), facts())).toBe(true);
    expect(ruleMatches(rule({ model: 'smarter' }), facts())).toBe(false);
    expect(ruleMatches(rule({ model: ['other', 'smart'] }), facts())).toBe(true);
    expect(ruleMatches(rule({ model: 'openai/*' }), facts({ model: 'openai/gpt-4o' }))).toBe(true);
    expect(ruleMatches(rule({ model: 'openai/*' }), facts({ model: 'anthropic/claude' }))).toBe(false);
    expect(ruleMatches(rule({ model: 'sm*' }), facts())).toBe(true);
  });

  it('key: by id or name; never without a key', () => {
    expect(ruleMatches(rule({ key: 'key-1' }), facts())).toBe(true);
    expect(ruleMatches(rule({ key: 'backend' }), facts())).toBe(true);
    expect(ruleMatches(rule({ key: ['x', 'backend'] }), facts())).toBe(true);
    expect(ruleMatches(rule({ key: 'key-2' }), facts())).toBe(false);
    expect(ruleMatches(rule({ key: 'key-1' }), facts({ key: null }))).toBe(false);
  });

  it('team: by id or name; never without a team', () => {
    expect(ruleMatches(rule({ team: 'team-1' }), facts())).toBe(true);
    expect(ruleMatches(rule({ team: ['search'] }), facts())).toBe(true);
    expect(ruleMatches(rule({ team: 'ads' }), facts())).toBe(false);
    expect(ruleMatches(rule({ team: 'team-1' }), facts({ team: null }))).toBe(false);
  });

  it('metadata: every entry must equal the request metadata, else the key metadata; compared as text', () => {
    const when = { metadata: { tier: 'free', priority: 1 } };
    expect(ruleMatches(rule(when), facts({ metadata: { tier: 'free', priority: '1', extra: true } }))).toBe(true);
    expect(ruleMatches(rule(when), facts({ metadata: { tier: 'free' } }))).toBe(false);
    expect(ruleMatches(rule(when), facts({ metadata: { tier: 'paid', priority: 1 } }))).toBe(false);
    // Missing from the request: the key's metadata answers.
    const key = { id: 'key-1', name: 'backend', metadata: { tier: 'free', priority: 1 } };
    expect(ruleMatches(rule(when), facts({ key, metadata: null }))).toBe(true);
    // The request's own value wins over the key's.
    expect(ruleMatches(rule(when), facts({ key, metadata: { tier: 'paid' } }))).toBe(false);
    expect(ruleMatches(rule({ metadata: { beta: true } }), facts({ metadata: { beta: 'true' } }))).toBe(true);
    expect(ruleMatches(rule({ metadata: { beta: true } }), facts({ key: null, metadata: null }))).toBe(false);
  });

  it('key_budget_used_pct_gte: at least the threshold; never without a budget', () => {
    expect(ruleMatches(rule({ key_budget_used_pct_gte: 80 }), facts({ keyBudget: 80 }))).toBe(true);
    expect(ruleMatches(rule({ key_budget_used_pct_gte: 80 }), facts({ keyBudget: 95.5 }))).toBe(true);
    expect(ruleMatches(rule({ key_budget_used_pct_gte: 80 }), facts({ keyBudget: 79.9 }))).toBe(false);
    expect(ruleMatches(rule({ key_budget_used_pct_gte: 0 }), facts({ keyBudget: null }))).toBe(false);
    expect(ruleMatches(rule({ key_budget_used_pct_gte: 0 }), facts({ keyBudget: 0 }))).toBe(true);
  });

  it('team_budget_used_pct_gte: at least the threshold; never without a budget', () => {
    expect(ruleMatches(rule({ team_budget_used_pct_gte: 50 }), facts({ teamBudget: 50 }))).toBe(true);
    expect(ruleMatches(rule({ team_budget_used_pct_gte: 50 }), facts({ teamBudget: 49 }))).toBe(false);
    expect(ruleMatches(rule({ team_budget_used_pct_gte: 50 }), facts({ teamBudget: null }))).toBe(false);
    // The key's budget does not stand in for the team's.
    expect(ruleMatches(rule({ team_budget_used_pct_gte: 50 }), facts({ keyBudget: 100, teamBudget: null }))).toBe(false);
  });

  it('target_rps_gte: asks about the named target and compares at least', () => {
    const when = { target_rps_gte: { target: 'openai/gpt-4o', rps: 5 } };
    const busy = facts({ rps: { 'openai/gpt-4o': 5 } });
    expect(ruleMatches(rule(when), busy)).toBe(true);
    expect(busy.targetRps).toHaveBeenCalledWith('openai/gpt-4o');
    expect(ruleMatches(rule(when), facts({ rps: { 'openai/gpt-4o': 4.9, 'openai/other': 50 } }))).toBe(false);
  });

  it('estimated tokens: gte is inclusive, lt is exclusive, both together form a range', () => {
    expect(ruleMatches(rule({ estimated_tokens_gte: 1000 }), facts({ tokens: 1000 }))).toBe(true);
    expect(ruleMatches(rule({ estimated_tokens_gte: 1000 }), facts({ tokens: 999 }))).toBe(false);
    expect(ruleMatches(rule({ estimated_tokens_gte: 0 }), facts({ tokens: 0 }))).toBe(true);
    expect(ruleMatches(rule({ estimated_tokens_lt: 1000 }), facts({ tokens: 999 }))).toBe(true);
    expect(ruleMatches(rule({ estimated_tokens_lt: 1000 }), facts({ tokens: 1000 }))).toBe(false);
    const range = rule({ estimated_tokens_gte: 100, estimated_tokens_lt: 200 });
    expect(ruleMatches(range, facts({ tokens: 99 }))).toBe(false);
    expect(ruleMatches(range, facts({ tokens: 150 }))).toBe(true);
    expect(ruleMatches(range, facts({ tokens: 200 }))).toBe(false);
  });
});

describe('ruleMatches: AND semantics and laziness', () => {
  const all = rule({
    model: 'smart',
    key: 'backend',
    team: 'search',
    metadata: { tier: 'free' },
    key_budget_used_pct_gte: 80,
    team_budget_used_pct_gte: 50,
    target_rps_gte: { target: 'openai/gpt-4o', rps: 1 },
    estimated_tokens_gte: 10,
    estimated_tokens_lt: 1000,
  });
  const matching: FactOverrides = { metadata: { tier: 'free' }, keyBudget: 90, teamBudget: 60, rps: { 'openai/gpt-4o': 2 }, tokens: 500 };

  it('matches only when every condition holds', () => {
    expect(ruleMatches(all, facts(matching))).toBe(true);
    const breakOne: FactOverrides[] = [
      { model: 'other' },
      { key: { id: 'k', name: 'n', metadata: {} } },
      { team: null },
      { metadata: { tier: 'paid' } },
      { keyBudget: 10 },
      { teamBudget: null },
      { rps: {} },
      { tokens: 5 },
      { tokens: 5_000 },
    ];
    for (const change of breakOne) expect(ruleMatches(all, facts({ ...matching, ...change })), JSON.stringify(change)).toBe(false);
  });

  it('does not compute expensive facts a rule does not ask about', () => {
    const f = facts();
    expect(ruleMatches(rule({ model: 'smart', key: 'backend', team: 'search', metadata: {} }), f)).toBe(true);
    expect(f.estimatedTokens).not.toHaveBeenCalled();
    expect(f.keyBudgetUsedPct).not.toHaveBeenCalled();
    expect(f.teamBudgetUsedPct).not.toHaveBeenCalled();
    expect(f.targetRps).not.toHaveBeenCalled();
  });

  it('checks cheap conditions first, so a failing one spares the expensive ones', () => {
    const f = facts({ ...matching, model: 'other' });
    expect(ruleMatches(all, f)).toBe(false);
    expect(f.estimatedTokens).not.toHaveBeenCalled();
    expect(f.keyBudgetUsedPct).not.toHaveBeenCalled();
    expect(f.targetRps).not.toHaveBeenCalled();
    // A failing budget condition spares the token count, the most expensive fact.
    const g = facts({ ...matching, keyBudget: 0 });
    expect(ruleMatches(all, g)).toBe(false);
    expect(g.estimatedTokens).not.toHaveBeenCalled();
  });

  it('counts tokens once for a range', () => {
    const f = facts({ tokens: 150 });
    expect(ruleMatches(rule({ estimated_tokens_gte: 100, estimated_tokens_lt: 200 }), f)).toBe(true);
    expect(f.estimatedTokens).toHaveBeenCalledTimes(1);
  });
});

describe('firstMatchingRule', () => {
  it('returns null when nothing matches', () => {
    expect(firstMatchingRule([], facts())).toBeNull();
    expect(firstMatchingRule([rule({ model: 'other' })], facts())).toBeNull();
  });

  it('the first matching rule wins, named by its name or position', () => {
    const rules = [rule({ model: 'other' }, 'a'), rule({ key: 'backend' }, 'b'), rule({}, 'c', 'catch-all')];
    const match = firstMatchingRule(rules, facts());
    expect(match?.rule).toBe(rules[1]);
    expect(match?.name).toBe('rule-1');
    expect(firstMatchingRule(rules, facts({ key: null }))).toEqual({ rule: rules[2], name: 'catch-all' });
  });

  it('a matching rule that routes the model to itself still decides: later rules are not consulted', () => {
    const rules = [rule({}, 'smart', 'keep'), rule({}, 'cheap', 'real')];
    expect(firstMatchingRule(rules, facts())).toEqual({ rule: rules[0], name: 'keep' });
    // Its conditions still count: when they fail, the next rule is considered.
    expect(firstMatchingRule([rule({ key: 'other' }, 'smart'), rules[1] as RoutingRuleConfig], facts())).toEqual({ rule: rules[1], name: 'real' });
  });

  it('stops evaluating rules after the first match', () => {
    const f = facts();
    expect(firstMatchingRule([rule({}, 'cheap', 'first'), rule({ estimated_tokens_gte: 1 })], f)?.name).toBe('first');
    expect(f.estimatedTokens).not.toHaveBeenCalled();
  });
});
