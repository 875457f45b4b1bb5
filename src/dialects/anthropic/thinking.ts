import { invalidRequest } from './errors.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { effortFor } from '../../wire/anthropic/thinking-budgets.js';

export interface ThinkingFields {
  thinking?: Json;
  reasoning_effort?: 'low' | 'medium' | 'high';
}

/**
 * Anthropic's `thinking` config for the canonical request: kept as `thinking` for the adapters that read it
 * (Vertex AI's Claude; an attempt on any other format gets the request without it, see markers.ts), and as
 * reasoning_effort when it is enabled with a budget.
 */
export function canonicalThinking(thinking: unknown): ThinkingFields {
  if (thinking === undefined || thinking === null) return {};
  if (!isRecord(thinking) || typeof thinking.type !== 'string') throw invalidRequest('thinking', "Input should be a valid dictionary with a 'type'");
  const out: ThinkingFields = { thinking };
  if (thinking.type === 'enabled') {
    const budget = thinking.budget_tokens;
    if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1) throw invalidRequest('thinking.budget_tokens', 'Input should be a positive integer');
    out.reasoning_effort = effortFor(budget);
  }
  return out;
}
