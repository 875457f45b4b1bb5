import type { CompletionUsage } from '../../dialects/openai/types.js';
import type { AnthropicUsage } from './shapes.js';

function tokens(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * Anthropic's usage in the canonical shape (see tokenUsageFromOpenAI). Anthropic's input_tokens leaves the
 * cache out, so the prompt total adds cache reads and writes back; the parts go to prompt_tokens_details.
 */
export function canonicalUsage(usage: AnthropicUsage): CompletionUsage {
  const cacheRead = tokens(usage.cache_read_input_tokens);
  const cacheWrite = tokens(usage.cache_creation_input_tokens);
  const prompt = tokens(usage.input_tokens) + cacheRead + cacheWrite;
  const completion = tokens(usage.output_tokens);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
  };
}
