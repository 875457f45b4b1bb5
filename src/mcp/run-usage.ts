import type { CachedNative } from '../cache/cache-store.js';
import { nativeBodyOf } from '../cache/native-reshape.js';
import { isRecord } from '../core/is-record.js';

type Json = Record<string, unknown>;

/**
 * Two usages' counts added, field by field and into nested counts (`prompt_tokens_details.cached_tokens`,
 * Anthropic's `cache_creation`, Gemini's `thoughtsTokenCount`): the parts must add up with the totals, or an
 * Anthropic client reads the turns' cache reads but the last's as uncached input. Other values are the later's.
 */
export function addCounts(total: Json, usage: Json): Json {
  const sum: Json = { ...total, ...usage };
  for (const [field, value] of Object.entries(usage)) {
    const before = total[field];
    if (typeof value === 'number' && typeof before === 'number') sum[field] = before + value;
    else if (isRecord(value) && isRecord(before)) sum[field] = addCounts(before, value);
    else if (Array.isArray(value) && Array.isArray(before)) sum[field] = addModalityCounts(before, value);
  }
  return sum;
}

/** Gemini's counts by modality (`promptTokensDetails`: `[{modality, tokenCount}]`) added modality by modality. */
function addModalityCounts(total: readonly unknown[], counts: readonly unknown[]): unknown[] {
  const modality = (item: unknown): string | null => (isRecord(item) && typeof item.modality === 'string' ? item.modality : null);
  if (![...total, ...counts].every((item) => modality(item) !== null)) return [...counts];
  const sum = new Map<string, Json>();
  for (const item of [...total, ...counts] as Json[]) {
    const key = item.modality as string;
    const before = sum.get(key);
    sum.set(key, before ? addCounts(before, item) : item);
  }
  return [...sum.values()];
}

/** Where a format's whole answer keeps its usage: Anthropic's `usage`, Gemini's `usageMetadata`. */
export function usageField(format: string): string | null {
  if (format === 'anthropic') return 'usage';
  if (format === 'gemini') return 'usageMetadata';
  return null;
}

/** One turn's usage in its upstream's own shape (its whole message's, or its stream's as a message has it). */
export function nativeTurnUsage(answer: CachedNative | null): Json | null {
  const field = answer ? usageField(answer.format) : null;
  const body = answer && field ? nativeBodyOf(answer) : null;
  const usage = body && field ? body[field] : null;
  return isRecord(usage) ? usage : null;
}

/** An upstream's whole answer with the usage of the turns before it added in (the run's usage, in its own shape). */
export function withEarlierUsage(format: string, body: Json, earlier: Json | null): Json {
  const field = usageField(format);
  if (!field || !earlier) return body;
  const own = isRecord(body[field]) ? (body[field] as Json) : {};
  return { ...body, [field]: addCounts(earlier, own) };
}
