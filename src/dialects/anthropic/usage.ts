import { tokenUsageFromOpenAI } from '../../core/usage.js';
import type { CompletionUsage } from '../../core/canonical.js';
import type { AnthropicUsageOut } from './shapes.js';

/**
 * Canonical usage in Anthropic's terms. The canonical prompt total includes cache reads and writes, while
 * Anthropic's input_tokens leaves them out and reports them beside it; the cost code's reading of the canonical
 * shape (every provider's cache field names) is reused so both agree on what was cached.
 */
export function anthropicUsage(usage: CompletionUsage | null | undefined): AnthropicUsageOut {
  if (!usage) return { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const tokens = tokenUsageFromOpenAI(usage);
  return {
    input_tokens: Math.max(0, tokens.input_tokens - tokens.cache_read_tokens - tokens.cache_write_tokens),
    output_tokens: tokens.output_tokens,
    cache_creation_input_tokens: tokens.cache_write_tokens,
    cache_read_input_tokens: tokens.cache_read_tokens,
  };
}
