/**
 * The one usage type: what a request used, in tokens, however its provider reported it. Cost, budgets, rate limits,
 * events and logs all speak it; the wire shapes (OpenAI's `usage`, Anthropic's, Gemini's `usageMetadata`) are read
 * into it once.
 */
import type { CompletionUsage } from './canonical.js';

/**
 * What a request used, in the units @pydantic/genai-prices prices (its usage keys, same names).
 *
 * `input_tokens` is the WHOLE prompt: uncached tokens plus cache reads plus cache writes. `cache_read_tokens`
 * and `cache_write_tokens` are parts of it, billed at their own rates instead of (never on top of) the input
 * rate. Likewise `output_tokens` is the whole completion, reasoning and audio included. The optional fields are
 * further parts of those totals that a few models bill differently (audio, images, reasoning); leave them out
 * when unknown and those tokens are billed at the plain input/output rate.
 */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  /**
   * Part of cache_write_tokens: writes to Anthropic's 1-hour cache, billed at their own rate (2x the input rate,
   * where a 5-minute write is 1.25x). The rest of cache_write_tokens is billed at the plain cache-write rate.
   */
  cache_write_1h_tokens?: number;
  /** Part of input_tokens. */
  input_audio_tokens?: number;
  /** Part of input_tokens. */
  input_image_tokens?: number;
  /** Part of output_tokens. */
  output_audio_tokens?: number;
  /** Part of output_tokens. */
  output_image_tokens?: number;
  /** Part of output_tokens. */
  output_reasoning_tokens?: number;
  /**
   * Web searches the provider ran for the request and bills per search (genai-prices' `web_searches`, priced per
   * thousand): a count of searches, not of tokens, and no part of either total.
   */
  web_searches?: number;
  /**
   * The fee per request the upstream says it charged, in USD (Perplexity's `usage.cost.request_cost`, "includes pro
   * search cost if applicable"): it stands for the catalogue's per-request price, which is only the dearest tier's
   * (Perplexity's fee depends on the search context size the request ran at).
   */
  request_fee_usd?: number;
  /**
   * What the upstream says it charged for the request, in USD, when it says (OpenRouter's `usage.cost`): the exact
   * bill, which prices what no token count shows (the provider OpenRouter routed to, its web plugin, a BYOK fee).
   */
  upstream_cost_usd?: number;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

function firstCount(...values: unknown[]): number {
  for (const value of values) if (typeof value === 'number' && Number.isFinite(value)) return Math.max(0, value);
  return 0;
}

/**
 * Whether the reasoning tokens were counted beside completion_tokens instead of in it, as xAI counts them ("counted
 * separately from completion_tokens, but ... in the total_tokens", docs.x.ai consumption and rate limits): its
 * total_tokens is then exactly prompt + completion + reasoning. OpenAI's is prompt + completion, reasoning included,
 * so with any reasoning the two never agree.
 */
function reasoningOutside(usage: CompletionUsage, reasoning: number): boolean {
  return reasoning > 0 && usage.total_tokens === count(usage.prompt_tokens) + count(usage.completion_tokens) + reasoning;
}

/**
 * Maps OpenAI's usage shape onto genai-prices' keys, one to one, so nothing is counted twice:
 *
 * - `input_tokens`        = `prompt_tokens` (OpenAI's prompt total already includes the cached tokens)
 * - `cache_read_tokens`   = `prompt_tokens_details.cached_tokens` (a part of prompt_tokens), else top-level
 *                           `cache_read_input_tokens`, else DeepSeek's `prompt_cache_hit_tokens` (its documented
 *                           field, a part of prompt_tokens too: prompt_tokens = hits + misses), else Moonshot's
 *                           top-level `cached_tokens` (a part of prompt_tokens)
 * - `cache_write_tokens`  = `prompt_tokens_details.cache_write_tokens` (OpenRouter's name), else
 *                           `prompt_tokens_details.cache_creation_tokens`, else top-level
 *                           `cache_creation_input_tokens` (Anthropic/LiteLLM's name); OpenAI itself reports none.
 *                           Native adapters that learn of cache writes put them in
 *                           `prompt_tokens_details.cache_write_tokens` AND count them in `prompt_tokens`.
 * - `output_tokens`       = `completion_tokens` (includes reasoning and audio tokens), plus the reasoning when
 *                           `total_tokens` shows it counted beside completion_tokens rather than in it (xAI:
 *                           total_tokens = prompt + completion + reasoning, see reasoningOutside)
 * - `output_reasoning_tokens` = `completion_tokens_details.reasoning_tokens` (a part of the output)
 * - `input_audio_tokens` / `input_image_tokens` = `prompt_tokens_details.audio_tokens` / `.image_tokens`
 * - `output_audio_tokens` / `output_image_tokens` = `completion_tokens_details.audio_tokens` / `.image_tokens`
 * - Perplexity's top-level extras (see addPerplexityExtras): `citation_tokens` added to the input, top-level
 *   `reasoning_tokens` added to the output as its reasoning part, `num_search_queries` as `web_searches`,
 *   `cost.request_cost` as its fee per request (`request_fee_usd`)
 * - Anthropic's, under its own names (see addAnthropicExtras): `cache_creation.ephemeral_1h_input_tokens` as
 *   `cache_write_1h_tokens`, `server_tool_use.web_search_requests` as `web_searches`
 *
 * When a provider's parts do not fit in its totals (a total that leaves the cache out), the total is raised to
 * the sum of the parts rather than billing any token twice.
 */
export function tokenUsageFromOpenAI(usage: CompletionUsage): TokenUsage {
  const prompt = record(usage.prompt_tokens_details);
  const completion = record(usage.completion_tokens_details);
  const cacheRead = firstCount(prompt?.cached_tokens, usage.cache_read_input_tokens, usage.prompt_cache_hit_tokens, usage.cached_tokens);
  const cacheWrite = firstCount(prompt?.cache_write_tokens, prompt?.cache_creation_tokens, usage.cache_creation_input_tokens);
  const result: TokenUsage = {
    input_tokens: Math.max(count(usage.prompt_tokens), cacheRead + cacheWrite),
    output_tokens: count(usage.completion_tokens),
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
  };
  const inputAudio = count(prompt?.audio_tokens);
  const inputImage = count(prompt?.image_tokens);
  const outputAudio = count(completion?.audio_tokens);
  const outputImage = count(completion?.image_tokens);
  const reasoning = count(completion?.reasoning_tokens);
  if (inputAudio) result.input_audio_tokens = inputAudio;
  if (inputImage) result.input_image_tokens = inputImage;
  if (outputAudio) result.output_audio_tokens = outputAudio;
  if (outputImage) result.output_image_tokens = outputImage;
  if (reasoning) result.output_reasoning_tokens = reasoning;
  if (reasoningOutside(usage, reasoning)) result.output_tokens += reasoning;
  addPerplexityExtras(usage, result);
  addAnthropicExtras(usage, result);
  const charged = upstreamCost(usage);
  if (charged !== undefined) result.upstream_cost_usd = charged;
  result.output_tokens = Math.max(result.output_tokens, reasoning, outputAudio + outputImage);
  result.input_tokens = Math.max(result.input_tokens, inputAudio + inputImage);
  return result;
}

/**
 * Perplexity's Sonar Deep Research reports three billed meters at the top level of `usage`, beside (not in) its
 * prompt_tokens and completion_tokens, whose total_tokens is prompt + completion only (docs.perplexity.ai,
 * pricing and the chat completions response's UsageInfo):
 * - `citation_tokens`: "Input tokens comprise of Prompt tokens (user prompt) + Citation tokens", billed at the
 *   input rate, so they join input_tokens;
 * - `reasoning_tokens`: "a distinct step" before the answer, billed at their own rate, so they join output_tokens
 *   as its reasoning part (which genai-prices prices at the model's reasoning rate);
 * - `num_search_queries`: searches, billed per thousand (`web_searches`).
 * The top-level reasoning count is only read when the usage has no `completion_tokens_details.reasoning_tokens`:
 * beside an OpenAI-style one it would be the same tokens twice.
 * The other Sonar models charge a fee per request that depends on the search context size instead (see
 * perplexityRequestFee).
 */
function addPerplexityExtras(usage: CompletionUsage, result: TokenUsage): void {
  const citations = count(usage.citation_tokens);
  const reasoning = result.output_reasoning_tokens === undefined ? count(usage.reasoning_tokens) : 0;
  const searches = count(usage.num_search_queries);
  result.input_tokens += citations;
  if (reasoning) {
    result.output_tokens += reasoning;
    result.output_reasoning_tokens = reasoning;
  }
  if (searches) result.web_searches = searches;
  perplexityRequestFee(usage, result);
}

/**
 * The fee per request of a Sonar answer (docs.perplexity.ai pricing: "Total cost per query = Token costs + Request
 * fee (varies by search context size)"), as the usage's `cost` breakdown states it (`request_cost`, USD, a Pro
 * Search's cost included). Only the request fee is taken from the breakdown: the tokens are priced from their
 * counts, as for every other vendor (the breakdown's token costs are rounded: 0.0 for a few hundred Sonar tokens).
 */
function perplexityRequestFee(usage: CompletionUsage, result: TokenUsage): void {
  const stated = record(usage.cost)?.request_cost;
  if (typeof stated === 'number' && Number.isFinite(stated) && stated >= 0) result.request_fee_usd = stated;
}

/**
 * Anthropic's meters beside its token counts (platform.claude.com, prompt caching and the Messages usage object),
 * kept under its names by the Anthropic adapters (see canonicalUsage) and by proxies that pass them on:
 * - `cache_creation.ephemeral_1h_input_tokens`: the part of the cache writes made to the 1-hour cache, billed at
 *   2x the input rate (the 5-minute writes at 1.25x), never more than the writes counted;
 * - `server_tool_use.web_search_requests`: the web search tool's searches, billed per thousand (`web_searches`).
 */
function addAnthropicExtras(usage: CompletionUsage, result: TokenUsage): void {
  const oneHour = Math.min(count(record(usage.cache_creation)?.ephemeral_1h_input_tokens), result.cache_write_tokens);
  const searches = count(record(usage.server_tool_use)?.web_search_requests);
  if (oneHour) result.cache_write_1h_tokens = oneHour;
  if (searches) result.web_searches = (result.web_searches ?? 0) + searches;
}

/**
 * OpenRouter's own charge (openrouter.ai docs, usage accounting): `cost` is what it took from the account's credits
 * (USD); with the account's own provider key (`is_byok`) that is only OpenRouter's fee, and the provider's charge,
 * billed to that key, is `cost_details.upstream_inference_cost`. Undefined when the usage states no cost as a
 * number (Perplexity's `cost` is a breakdown object, priced from its counts instead).
 */
function upstreamCost(usage: CompletionUsage): number | undefined {
  const cost = usage.cost;
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost < 0) return undefined;
  const details = record(usage.cost_details);
  return usage.is_byok === true ? cost + count(details?.upstream_inference_cost) : cost;
}

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
