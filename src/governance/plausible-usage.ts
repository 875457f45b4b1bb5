import type { CompletionUsage } from '../core/canonical.js';
import type { RequestContext } from '../core/context.js';
import { tokenUsageFromOpenAI, type TokenUsage } from '../core/usage.js';
import { isRecord } from '../core/is-record.js';
import { requestedMaxOutput } from './request-numbers.js';
import { promptTokensOf } from './prompt-tokens.js';
import { TokenCounter } from '../tokens/tokenizer.js';
import type { ReceivedText } from '../tokens/received-text.js';

/**
 * Prompt tokens always plausible, whatever the request shows: a provider may bill input the request does not
 * carry (a Gemini `cachedContent` or a stored prompt referenced by id, server-side search results, tool-use
 * preambles), up to a whole context window. The largest window offered is 10M tokens (Llama 4 Scout), so only
 * counts beyond that are measured against the request. What this stops is the absurd (1e300, overflow to
 * Infinity), without under-charging a legitimate hidden prompt.
 */
const PROMPT_FLOOR = 10_000_000;
/** Tokens one non-text part (image, audio, file, video) may stand for: a long PDF or video by URL is ~1-2M. */
const MEDIA_PART_TOKENS = 2_000_000;
/** Output tokens per choice always plausible, whatever the request's limit: twice the largest output limit (with thinking) any model has. */
const OUTPUT_CEILING = 262_144;

/**
 * The most prompt tokens the request can plausibly have used. No tokenizer yields more tokens than its text
 * has UTF-8 bytes, and a UTF-16 unit is at most 3 of them: so 3 per character of every string (and key) in
 * the request, plus a floor for what the provider adds, plus a generous allowance per non-text part (whose
 * size the request does not show). Walked without recursion; only asked for counts above the floor.
 */
function promptCeiling(ctx: RequestContext): number {
  let chars = 0;
  let media = 0;
  const stack: unknown[] = [ctx.request];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string') chars += value.length;
    else if (typeof value === 'number') chars += 1;
    else if (Array.isArray(value)) for (const item of value) stack.push(item);
    else if (isRecord(value)) {
      for (const key in value) {
        chars += key.length;
        stack.push(value[key]);
      }
    }
  }
  const messages = ctx.operation === 'chat' ? ctx.request.messages : [];
  for (const message of messages) {
    if (!Array.isArray(message.content)) continue;
    for (const part of message.content as unknown[]) if (isRecord(part) && part.type !== 'text') media++;
  }
  return PROMPT_FLOOR + 8 * messages.length + 3 * chars + MEDIA_PART_TOKENS * media;
}

function outputCeiling(ctx: RequestContext): number {
  // The budget stage has checked these numbers; without it in the pipeline they may be anything.
  const n = ctx.operation === 'chat' ? ctx.request.n : undefined;
  const choices = typeof n === 'number' && n > 1 && n <= 128 ? n : 1;
  const requested = requestedMaxOutput(ctx);
  return Number.isFinite(requested) ? Math.max(requested, OUTPUT_CEILING * choices) : OUTPUT_CEILING * choices;
}

/** A token count as a provider may report it: an integer from 0 to what a double holds exactly. */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Fields of a usage that hold money, not counts: OpenRouter's `cost` (USD) and `cost_details` (its parts, USD). */
const MONEY_FIELDS = new Set(['cost', 'cost_details']);

/** Whether the totals are counts (or absent) and every number in the usage (and its `*_details`) is a count. */
function countsWellFormed(usage: CompletionUsage): boolean {
  for (const total of [usage.prompt_tokens, usage.completion_tokens] as unknown[]) if (total !== undefined && total !== null && !isCount(total)) return false;
  // for-in rather than Object.entries: this runs on every answer, and allocates nothing this way.
  const fields = usage as unknown as Record<string, unknown>;
  for (const field in fields) {
    // Money is not a count: OpenRouter's decimal `cost` made every one of its answers "implausible" (a warning each).
    if (MONEY_FIELDS.has(field)) continue;
    const value = fields[field];
    if (typeof value === 'number') {
      if (!isCount(value)) return false;
    } else if (isRecord(value) && field.endsWith('_details')) {
      for (const part in value) {
        const inner = value[part];
        if (typeof inner === 'number' && !isCount(inner)) return false;
      }
    }
  }
  return true;
}

export interface CheckedUsage {
  tokens: TokenUsage;
  /** Why the upstream's usage was not charged as reported, or null when it was. */
  implausible: string | null;
}

/**
 * The usage to charge for what the upstream reported. An upstream is trusted for its counts, within reason:
 * a count that is not a non-negative integer is replaced by the gateway's own count (the prompt's tokens, the
 * text the client received), and a count above what the request can plausibly have used (see
 * promptCeiling and outputCeiling) is cut to that bound. Parts (cached, reasoning, audio, image tokens) never
 * exceed their totals afterwards.
 */
export function plausibleUsage(ctx: RequestContext, usage: CompletionUsage, received: ReceivedText): CheckedUsage {
  const tokens = tokenUsageFromOpenAI(usage);
  const reasons: string[] = [];
  if (!countsWellFormed(usage)) reasons.push('a count is not a non-negative integer');
  // A total that is not a count (or is missing) is the gateway's own count instead, as when no usage came.
  if (!isCount(usage.prompt_tokens) || !isCount(usage.completion_tokens)) {
    const counter = new TokenCounter();
    if (!isCount(usage.prompt_tokens)) tokens.input_tokens = promptTokensOf(ctx, counter);
    if (!isCount(usage.completion_tokens)) tokens.output_tokens = received.tokens(counter);
  }
  if (tokens.input_tokens > PROMPT_FLOOR) {
    const ceiling = promptCeiling(ctx);
    if (tokens.input_tokens > ceiling) {
      reasons.push(`${tokens.input_tokens} prompt tokens for a request of at most ${ceiling}`);
      tokens.input_tokens = ceiling;
    }
  }
  const outputMax = outputCeiling(ctx);
  if (tokens.output_tokens > outputMax) {
    reasons.push(`${tokens.output_tokens} completion tokens where at most ${outputMax} can be`);
    tokens.output_tokens = outputMax;
  }
  // Parts within their (possibly cut or replaced) totals; cache reads and writes together within the prompt.
  const input = tokens.input_tokens;
  const output = tokens.output_tokens;
  tokens.cache_read_tokens = Math.min(tokens.cache_read_tokens, input);
  tokens.cache_write_tokens = Math.min(tokens.cache_write_tokens, input - tokens.cache_read_tokens);
  for (const part of ['input_audio_tokens', 'input_image_tokens'] as const) if (tokens[part] !== undefined) tokens[part] = Math.min(tokens[part], input);
  for (const part of ['output_reasoning_tokens', 'output_audio_tokens', 'output_image_tokens'] as const) {
    if (tokens[part] !== undefined) tokens[part] = Math.min(tokens[part], output);
  }
  return { tokens, implausible: reasons.length > 0 ? reasons.join('; ') : null };
}
