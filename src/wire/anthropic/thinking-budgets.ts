/**
 * OpenAI's reasoning_effort and Anthropic's thinking budget, both ways. The /v1 route's `reasoning_effort` becomes
 * a budget for an Anthropic upstream; an Anthropic client's budget becomes an effort for other upstreams. The cut
 * points are the budgets themselves, so a budget and its effort map onto each other.
 */

/** Thinking budgets for OpenAI's reasoning_effort levels; 1,024 is the smallest budget Anthropic accepts. */
export const EFFORT_BUDGETS: Readonly<Record<string, number>> = { minimal: 1024, low: 1024, medium: 2048, high: 4096 };
export const MIN_BUDGET = 1024;

/** The budget for an effort, or undefined for one OpenAI does not define. */
export function budgetFor(effort: unknown): number | undefined {
  return typeof effort === 'string' && Object.hasOwn(EFFORT_BUDGETS, effort) ? EFFORT_BUDGETS[effort] : undefined;
}

/** The effort for a budget: at least the budget each effort is given. */
export function effortFor(budget: number): 'low' | 'medium' | 'high' {
  if (budget >= (EFFORT_BUDGETS.high as number)) return 'high';
  if (budget >= (EFFORT_BUDGETS.medium as number)) return 'medium';
  return 'low';
}

/**
 * Anthropic's `output_config.effort` as OpenAI's reasoning_effort: low, medium and high are the same words; xhigh
 * and max, above Anthropic's default (high), are OpenAI's highest level. Undefined for what is not an effort level
 * (Anthropic judges such a body itself when it reaches Anthropic).
 */
export function effortOf(effort: unknown): 'low' | 'medium' | 'high' | undefined {
  switch (effort) {
    case 'low':
    case 'medium':
    case 'high':
      return effort;
    case 'xhigh':
    case 'max':
      return 'high';
    default:
      return undefined;
  }
}
