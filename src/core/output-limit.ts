import type { ChatCompletionRequest } from './canonical.js';
import { isRecord } from './is-record.js';

/** The target model's limits, as the catalogue has them: its output limit and its context window when known. */
export interface TargetLimits {
  output: number;
  context: number | null;
}

/**
 * How many of the gateway's tokens (OpenAI's o200k tokenizer) a prompt is assumed to take in the target's: other
 * vendors' tokenizers count some tenths more (Claude's), so the room left for the answer is reckoned with a margin.
 */
const PROMPT_MARGIN = 1.5;

/**
 * The request with its output limit fitted to the target model's `limits` (null when the catalogue does not know
 * it), for a target of another format than the client's:
 * - a `max_completion_tokens` or `max_tokens` above the model's output limit is lowered to it: the client asked
 *   its own format's model for that much, and this one would refuse it with a 400 (an Anthropic thinking budget
 *   then goes under the new limit too);
 * - when the request sets none and the target's API needs one (Anthropic's Messages: the adapter then sends
 *   `adapterDefault`, else null), it gets what a
 *   model of the client's format would have had without a limit: the model's output limit, or the room its context
 *   window leaves after the prompt (`promptTokens`, counted only then) when that is less, since Claude refuses a
 *   prompt and max_tokens that add up to more than the window; never less than the adapter's default.
 */
export function withOutputLimit(request: ChatCompletionRequest, limits: TargetLimits | null, adapterDefault: number | null, promptTokens: () => number): ChatCompletionRequest {
  if (limits === null) return request;
  const { max_completion_tokens: completion, max_tokens: legacy } = request;
  const over = (value: unknown): boolean => typeof value === 'number' && value > limits.output;
  if (over(completion) || over(legacy)) {
    const out: ChatCompletionRequest = { ...request };
    if (over(completion)) out.max_completion_tokens = limits.output;
    if (over(legacy)) out.max_tokens = limits.output;
    // An Anthropic client's thinking budget must stay under max_tokens (Claude refuses it otherwise): the limit the
    // client set it under is lowered, so the budget goes under the new one.
    const thinking = request.thinking;
    if (isRecord(thinking) && thinking.type === 'enabled' && typeof thinking.budget_tokens === 'number' && thinking.budget_tokens >= limits.output) {
      out.thinking = { ...thinking, budget_tokens: limits.output - 1 };
    }
    return out;
  }
  const unset = (value: unknown): boolean => value === undefined || value === null;
  if (adapterDefault === null || !unset(completion) || !unset(legacy)) return request;
  const room = limits.context === null ? limits.output : limits.context - Math.ceil(promptTokens() * PROMPT_MARGIN);
  const limit = Math.min(limits.output, room);
  return limit > adapterDefault ? { ...request, max_completion_tokens: limit } : request;
}
