import type { CompletionUsage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';

/** The usage object of OpenAI's Responses API (`Response.usage`, ResponseUsage in its OpenAPI document). */
export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; [field: string]: unknown };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number; [field: string]: unknown };
  total_tokens: number;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * A Responses usage in the canonical (chat completions) shape the cost, budget and log stages read: the input is the
 * whole prompt, its cached part in prompt_tokens_details, the output the whole answer, reasoning included, its
 * reasoning part in completion_tokens_details. Null when the answer carries none.
 */
export function completionUsageOf(usage: unknown): CompletionUsage | null {
  if (!isRecord(usage)) return null;
  const input = count(usage.input_tokens);
  const output = count(usage.output_tokens);
  const cached = isRecord(usage.input_tokens_details) ? count(usage.input_tokens_details.cached_tokens) : 0;
  const reasoning = isRecord(usage.output_tokens_details) ? count(usage.output_tokens_details.reasoning_tokens) : 0;
  return {
    prompt_tokens: input,
    completion_tokens: output,
    total_tokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : input + output,
    prompt_tokens_details: { cached_tokens: cached },
    completion_tokens_details: { reasoning_tokens: reasoning },
  };
}

/** A canonical usage as the Responses API writes it (the reverse of completionUsageOf). */
export function responseUsageOf(usage: CompletionUsage): ResponseUsage {
  const prompt = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const completion = isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  const input = count(usage.prompt_tokens);
  const output = count(usage.completion_tokens);
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(prompt.cached_tokens) },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(completion.reasoning_tokens) },
    total_tokens: count(usage.total_tokens) || input + output,
  };
}
