import type { CompletionUsage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { tokenCount as count, tokenUsageFromOpenAI } from '../../core/usage.js';
import type { Json } from './shapes.js';

/** Gemini's usageMetadata and the canonical usage, both ways. */

function modalityCount(details: unknown, modality: string): number {
  if (!Array.isArray(details)) return 0;
  let total = 0;
  for (const entry of details) {
    if (entry && typeof entry === 'object' && (entry as Record<string, unknown>).modality === modality) total += count((entry as Record<string, unknown>).tokenCount);
  }
  return total;
}

/**
 * Gemini `usageMetadata` → canonical usage. `promptTokenCount` already includes the cached content, so cache
 * reads are a part of prompt_tokens as the canonical contract wants; thinking tokens are billed as output, so
 * they join completion_tokens. Tool-use prompt tokens (built-in tools) are prompt tokens too.
 */
export function usageFromGemini(metadata: unknown): CompletionUsage | null {
  if (!metadata || typeof metadata !== 'object') return null;
  const m = metadata as Record<string, unknown>;
  const prompt = count(m.promptTokenCount) + count(m.toolUsePromptTokenCount);
  const thoughts = count(m.thoughtsTokenCount);
  const completion = count(m.candidatesTokenCount) + thoughts;
  const cached = count(m.cachedContentTokenCount);
  const audio = modalityCount(m.promptTokensDetails, 'AUDIO');
  const usage: CompletionUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: count(m.totalTokenCount) || prompt + completion,
    prompt_tokens_details: { cached_tokens: cached, ...(audio ? { audio_tokens: audio } : {}) },
    completion_tokens_details: { reasoning_tokens: thoughts },
  };
  return usage;
}

/**
 * Canonical usage → Gemini's usageMetadata, the inverse of usageFromGemini: thinking tokens are a part of
 * completion_tokens canonically and their own thoughtsTokenCount in Gemini; cached tokens are a part of the
 * prompt in both.
 */
export function geminiUsageMetadata(usage: CompletionUsage | null | undefined): Json | undefined {
  if (!usage) return undefined;
  const details = isRecord(usage.completion_tokens_details) ? usage.completion_tokens_details : {};
  const promptDetails = isRecord(usage.prompt_tokens_details) ? usage.prompt_tokens_details : {};
  const thoughts = count(details.reasoning_tokens);
  const cached = count(promptDetails.cached_tokens);
  const prompt = count(usage.prompt_tokens);
  // The output as tokenUsageFromOpenAI reads it: with the reasoning a vendor counted beside completion_tokens (xAI).
  const completion = tokenUsageFromOpenAI(usage).output_tokens;
  const out: Json = { promptTokenCount: prompt, candidatesTokenCount: Math.max(0, completion - thoughts), totalTokenCount: count(usage.total_tokens) || prompt + completion };
  if (cached > 0) out.cachedContentTokenCount = cached;
  if (thoughts > 0) out.thoughtsTokenCount = thoughts;
  return out;
}
