import type { CompletionUsage } from '../../core/canonical.js';
import { tokenCount as tokens, usageWithCacheParts } from '../usage-parts.js';
import type { AnthropicUsage } from './shapes.js';

/**
 * Anthropic's usage in the canonical shape (see tokenUsageFromOpenAI). Anthropic's input_tokens leaves the
 * cache out, so the prompt total adds cache reads and writes back; the parts go to prompt_tokens_details.
 */
export function canonicalUsage(usage: AnthropicUsage): CompletionUsage {
  return usageWithCacheParts(tokens(usage.input_tokens), tokens(usage.cache_read_input_tokens), tokens(usage.cache_creation_input_tokens), tokens(usage.output_tokens));
}
