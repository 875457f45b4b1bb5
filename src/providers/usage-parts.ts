import type { CompletionUsage } from '../core/canonical.js';

/** A token count from an upstream's usage field: a positive finite number, else 0. */
export function tokenCount(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * The canonical usage (see tokenUsageFromOpenAI) for providers whose input count leaves the cache out
 * (Anthropic, Bedrock Converse): the prompt total adds cache reads and writes back, which also go to
 * prompt_tokens_details as parts of it.
 */
export function usageWithCacheParts(uncachedInput: number, cacheRead: number, cacheWrite: number, output: number): CompletionUsage {
  const prompt = uncachedInput + cacheRead + cacheWrite;
  return {
    prompt_tokens: prompt,
    completion_tokens: output,
    total_tokens: prompt + output,
    prompt_tokens_details: { cached_tokens: cacheRead, cache_write_tokens: cacheWrite },
  };
}
