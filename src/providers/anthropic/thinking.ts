import { isRecord } from '../../core/is-record.js';
import { quoteValue } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';
import { budgetFor, MIN_BUDGET } from '../../wire/anthropic/thinking-budgets.js';


/**
 * Anthropic's `thinking` config for a request: an Anthropic-shaped `thinking` field passes through as given,
 * else `reasoning_effort` picks a budget (`none` turns thinking off). Undefined when the request asks for neither.
 */
export function thinkingOf(request: Record<string, unknown>): Record<string, unknown> | undefined {
  const given = request.thinking;
  if (given !== undefined && given !== null) {
    if (!isRecord(given) || typeof given.type !== 'string') throw gatewayError('invalid_request', "anthropic: thinking must be an object with a 'type'.", { param: 'thinking' });
    return given;
  }
  const effort = request.reasoning_effort;
  if (effort === undefined || effort === null) return undefined;
  if (effort === 'none') return { type: 'disabled' };
  const budget = budgetFor(effort);
  if (budget === undefined) throw gatewayError('invalid_request', `anthropic: unknown reasoning_effort '${quoteValue(effort)}'.`, { param: 'reasoning_effort' });
  return { type: 'enabled', budget_tokens: budget };
}

/**
 * Fits the thinking budget under max_tokens, which counts thinking and answer alike (as OpenAI's
 * max_completion_tokens counts reasoning). A budget from reasoning_effort shrinks to fit; one the client set
 * explicitly is left for Anthropic to judge.
 */
export function fitBudget(thinking: Record<string, unknown>, maxTokens: number, explicit: boolean): Record<string, unknown> {
  if (thinking.type !== 'enabled' || typeof thinking.budget_tokens !== 'number' || explicit) return thinking;
  if (thinking.budget_tokens < maxTokens) return thinking;
  const budget = maxTokens - 1;
  if (budget < MIN_BUDGET) {
    throw gatewayError('invalid_request', `anthropic: reasoning needs max_completion_tokens above ${MIN_BUDGET} (thinking budget plus answer).`, { param: 'max_completion_tokens' });
  }
  return { ...thinking, budget_tokens: budget };
}

/**
 * Whether the conversation continues a tool-use turn that carries no thinking: its last assistant message holds
 * tool_use blocks but does not start with a thinking block. With thinking enabled Anthropic refuses that ("a final
 * `assistant` message must start with a thinking block ... To avoid this requirement, disable `thinking`"), and a
 * translated conversation never has Claude's signed thinking to hand back (OpenAI's formats have no place for it).
 */
export function continuesUnthoughtToolTurn(messages: ReadonlyArray<{ role: string; content: unknown }>): boolean {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as { role: string; content: unknown };
    if (message.role !== 'assistant') continue;
    const content: unknown[] = Array.isArray(message.content) ? message.content : [];
    const first = content[0];
    const thought = isRecord(first) && (first.type === 'thinking' || first.type === 'redacted_thinking');
    return !thought && content.some((block) => isRecord(block) && block.type === 'tool_use');
  }
  return false;
}
