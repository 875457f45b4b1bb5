import { invalidRequest } from './errors.js';
import { type Json } from './shapes.js';
import { isRecord } from '../../is-record.js';

/**
 * OpenAI's reasoning_effort for an Anthropic thinking budget, so providers without Anthropic's `thinking`
 * field still reason. The cut points are the budgets the Anthropic adapter gives each effort (low 1,024,
 * medium 2,048, high 4,096), so a budget and its effort map onto each other both ways.
 */
export function effortFor(budget: number): 'low' | 'medium' | 'high' {
  if (budget >= 4096) return 'high';
  if (budget >= 2048) return 'medium';
  return 'low';
}

export interface ThinkingFields {
  thinking?: Json;
  reasoning_effort?: 'low' | 'medium' | 'high';
}

/**
 * Anthropic's `thinking` config for the canonical request: kept as `thinking` (the Anthropic adapter passes it
 * on unchanged) when the target may be Anthropic, and as reasoning_effort when it is enabled with a budget.
 */
export function canonicalThinking(thinking: unknown, keepAnthropicField: boolean): ThinkingFields {
  if (thinking === undefined || thinking === null) return {};
  if (!isRecord(thinking) || typeof thinking.type !== 'string') throw invalidRequest('thinking', "Input should be a valid dictionary with a 'type'");
  const out: ThinkingFields = keepAnthropicField ? { thinking } : {};
  if (thinking.type === 'enabled') {
    const budget = thinking.budget_tokens;
    if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1) throw invalidRequest('thinking.budget_tokens', 'Input should be a positive integer');
    out.reasoning_effort = effortFor(budget);
  }
  return out;
}
