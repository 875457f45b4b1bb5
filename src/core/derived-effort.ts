import type { ChatCompletionRequest } from './canonical.js';
import type { Target } from './provider.js';

/** OpenAI's reasoning_effort levels, least to most. */
const LEVELS = ['minimal', 'low', 'medium', 'high'];

/**
 * The levels the target's model takes, by its vendor's `reasoningEffortModels` (the longest matching prefix);
 * null when it takes none, undefined when the vendor does not say (every level goes).
 */
function levelsFor(target: Target): readonly string[] | null | undefined {
  const table = target.provider.vendor.quirks?.reasoningEffortModels;
  if (!table) return undefined;
  let best: string | null = null;
  for (const prefix of Object.keys(table)) if (target.model.startsWith(prefix) && (best === null || prefix.length > best.length)) best = prefix;
  return best === null ? null : (table[best] ?? null);
}

/**
 * The request with the reasoning_effort a dialect derived (from an Anthropic thinking budget or a Gemini
 * thinkingConfig) as the target's model takes it: left out where the vendor refuses the field, raised to the
 * nearest level taken (else lowered) where only some are. Unchanged when the vendor takes every level.
 */
export function withDerivedEffort(request: ChatCompletionRequest, target: Target | undefined): ChatCompletionRequest {
  const effort = request.reasoning_effort;
  if (target === undefined || typeof effort !== 'string') return request;
  const levels = levelsFor(target);
  if (levels === undefined || (levels !== null && levels.includes(effort))) return request;
  const out: ChatCompletionRequest = { ...request };
  delete out.reasoning_effort;
  if (levels === null || levels.length === 0) return out;
  const rank = LEVELS.indexOf(effort);
  const ranked = levels.filter((level) => LEVELS.includes(level)).sort((a, b) => LEVELS.indexOf(a) - LEVELS.indexOf(b));
  const nearest = ranked.find((level) => LEVELS.indexOf(level) >= rank) ?? ranked[ranked.length - 1];
  if (nearest !== undefined) out.reasoning_effort = nearest;
  return out;
}
