import type { CompletionUsage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { tokenCount as tokens, tokenUsageFromOpenAI, usageWithCacheParts } from '../../core/usage.js';
import type { AnthropicUsage, AnthropicUsageOut } from './shapes.js';

/** Anthropic's usage and the canonical one, both ways. */

/**
 * Anthropic's usage in the canonical shape (see tokenUsageFromOpenAI). Anthropic's input_tokens leaves the
 * cache out, so the prompt total adds cache reads and writes back; the parts go to prompt_tokens_details.
 * Two billed meters have no OpenAI field and keep Anthropic's names, which tokenUsageFromOpenAI reads:
 * `cache_creation` (the writes split by lifetime: a 1-hour write costs 2x the input rate, a 5-minute one 1.25x)
 * and `server_tool_use.web_search_requests` (the web search tool's searches, billed per search).
 */
export function canonicalUsage(usage: AnthropicUsage): CompletionUsage {
  const canonical = usageWithCacheParts(tokens(usage.input_tokens), tokens(usage.cache_read_input_tokens), tokens(usage.cache_creation_input_tokens), tokens(usage.output_tokens));
  if (isRecord(usage.cache_creation)) {
    canonical.cache_creation = {
      ephemeral_5m_input_tokens: tokens(usage.cache_creation.ephemeral_5m_input_tokens),
      ephemeral_1h_input_tokens: tokens(usage.cache_creation.ephemeral_1h_input_tokens),
    };
  }
  const searches = isRecord(usage.server_tool_use) ? tokens(usage.server_tool_use.web_search_requests) : 0;
  if (searches > 0) canonical.server_tool_use = { web_search_requests: searches };
  return canonical;
}

/**
 * Canonical usage in Anthropic's terms. The canonical prompt total includes cache reads and writes, while
 * Anthropic's input_tokens leaves them out and reports them beside it; the cost code's reading of the canonical
 * shape (every provider's cache field names) is reused so both agree on what was cached.
 */
export function anthropicUsage(usage: CompletionUsage | null | undefined): AnthropicUsageOut {
  if (!usage) return { input_tokens: 0, output_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const tokens = tokenUsageFromOpenAI(usage);
  const out: AnthropicUsageOut = {
    input_tokens: Math.max(0, tokens.input_tokens - tokens.cache_read_tokens - tokens.cache_write_tokens),
    output_tokens: tokens.output_tokens,
    cache_creation_input_tokens: tokens.cache_write_tokens,
    cache_read_input_tokens: tokens.cache_read_tokens,
  };
  // The writes by cache lifetime, when the upstream told them apart (Anthropic's own names, kept by a proxy of Claude):
  // the same split the cost was worked out from, the 1-hour part within the writes counted.
  if (isRecord(usage.cache_creation) || tokens.cache_write_1h_tokens !== undefined) {
    const oneHour = tokens.cache_write_1h_tokens ?? 0;
    out.cache_creation = { ephemeral_5m_input_tokens: tokens.cache_write_tokens - oneHour, ephemeral_1h_input_tokens: oneHour };
  }
  // Searches the upstream ran and bills per search (Anthropic's server_tool_use, Perplexity's num_search_queries).
  if (tokens.web_searches) out.server_tool_use = { web_search_requests: tokens.web_searches };
  return out;
}
