import type { ChatContext, RequestContext } from '../core/context.js';
import { gatewayError } from '../core/errors.js';

/**
 * Output tokens assumed when the request sets no limit, by requestedMaxOutput (judging an upstream's usage). The
 * budget's reservation and the tokens-per-minute hold use what the request can really take instead (output-reserve.ts).
 */
export const DEFAULT_MAX_OUTPUT_TOKENS = 4096;

/** The most output tokens a request may ask for: the largest value a provider's 32-bit field holds (Gemini's `maxOutputTokens` is an int32). */
export const MAX_OUTPUT_TOKENS_LIMIT = 2_147_483_647;
/** The most choices a request may ask for (OpenAI's own limit for `n`). */
export const MAX_CHOICES = 128;

/** The name a canonical field has in the client's own format, for the error's `param`. */
function clientParam(ctx: RequestContext, field: 'max_tokens' | 'max_completion_tokens' | 'n'): string {
  // The Anthropic route's max_tokens travels as max_completion_tokens.
  if (ctx.dialect === 'anthropic' && field === 'max_completion_tokens') return 'max_tokens';
  // The Responses route's max_output_tokens travels as max_completion_tokens too.
  if (ctx.dialect === 'openai-responses' && field === 'max_completion_tokens') return 'max_output_tokens';
  if (ctx.dialect !== 'gemini') return field;
  return field === 'n' ? 'generationConfig.candidateCount' : 'generationConfig.maxOutputTokens';
}

function checkCount(ctx: ChatContext, field: 'max_tokens' | 'max_completion_tokens' | 'n', min: number, max: number): void {
  const value: unknown = ctx.request[field];
  if (value === undefined || value === null) return;
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return;
  const param = clientParam(ctx, field);
  const shown = typeof value === 'number' ? String(value) : typeof value === 'string' ? JSON.stringify(value.slice(0, 40)) : typeof value;
  throw gatewayError('invalid_value', `Invalid '${param}': expected an integer from ${min} to ${max}, got ${shown}.`, { param: param });
}

/**
 * The numbers a reservation is made of, checked for every request (keyed or not) before anything is
 * reserved or sent: a negative, fractional, non-numeric or absurd `max_tokens` would otherwise make the
 * reservation negative (letting requests past a spent budget) or non-finite. Gemini's `candidateCount: 0` is
 * its "unset", so 0 choices pass there and count as 1.
 */
export function checkRequestNumbers(ctx: RequestContext): void {
  // Embeddings produce no output and have one answer per input: nothing to check.
  if (ctx.operation !== 'chat') return;
  checkCount(ctx, 'max_tokens', 0, MAX_OUTPUT_TOKENS_LIMIT);
  checkCount(ctx, 'max_completion_tokens', 0, MAX_OUTPUT_TOKENS_LIMIT);
  checkCount(ctx, 'n', ctx.dialect === 'gemini' ? 0 : 1, MAX_CHOICES);
}

/** Output tokens the request may produce at most (its limit, or the default, times its choices); checked numbers only. */
export function requestedMaxOutput(ctx: RequestContext): number {
  if (ctx.operation !== 'chat') return 0;
  const { max_completion_tokens: completion, max_tokens: legacy } = ctx.request;
  const limit = typeof completion === 'number' ? completion : typeof legacy === 'number' ? legacy : DEFAULT_MAX_OUTPUT_TOKENS;
  const choices = typeof ctx.request.n === 'number' && ctx.request.n > 1 ? ctx.request.n : 1;
  return limit * choices;
}
