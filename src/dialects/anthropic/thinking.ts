import { invalidRequest } from './errors.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { effortFor, effortOf } from '../../wire/anthropic/thinking-budgets.js';

export interface ThinkingFields {
  thinking?: Json;
  reasoning_effort?: 'low' | 'medium' | 'high';
}

/**
 * Anthropic's `thinking` config and `output_config.effort` for the canonical request: `thinking` is kept for the
 * adapters that read it (Vertex AI's Claude; an attempt on any other format gets the request without it, see
 * markers.ts), and the depth asked for becomes reasoning_effort. That depth is the effort when the client names one
 * (with adaptive thinking, the only way Claude's current models take a depth), else the budget of enabled thinking;
 * with thinking disabled there is none (a Gemini target would show its thoughts to a client that turned them off).
 */
export function canonicalThinking(thinking: unknown, outputConfig: unknown): ThinkingFields {
  const out: ThinkingFields = {};
  if (thinking !== undefined && thinking !== null) {
    if (!isRecord(thinking) || typeof thinking.type !== 'string') throw invalidRequest('thinking', "Input should be a valid dictionary with a 'type'");
    out.thinking = thinking;
    if (thinking.type === 'enabled') {
      const budget = thinking.budget_tokens;
      if (typeof budget !== 'number' || !Number.isInteger(budget) || budget < 1) throw invalidRequest('thinking.budget_tokens', 'Input should be a positive integer');
      out.reasoning_effort = effortFor(budget);
    }
  }
  const effort = isRecord(outputConfig) ? effortOf(outputConfig.effort) : undefined;
  if (effort !== undefined && out.thinking?.type !== 'disabled') out.reasoning_effort = effort;
  return out;
}
