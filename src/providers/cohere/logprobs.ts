import type { ChatCompletionRequest } from '../../core/canonical.js';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';

/**
 * Cohere's log probabilities (Chat API v2, docs.cohere.com/v2/reference/chat: the request's `logprobs: true`; the
 * answer's top-level `logprobs`, a list of LogprobItem, and in a stream each `content-delta` event's own `logprobs`, one
 * LogprobItem) as OpenAI's choice `logprobs`. A LogprobItem is a text chunk (`text`) with the ids (`token_ids`) and log
 * probabilities (`logprobs`) of the tokens that make it; Cohere gives no alternatives. So each chunk is one `content`
 * entry: its text as `token` (with its UTF-8 `bytes`), the sum of its tokens' log probabilities as `logprob` (the
 * chunk's own log probability: for a one-token chunk, the token's), and `top_logprobs` empty.
 */

interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: never[];
}

export interface CohereLogprobs {
  content: TokenLogprob[];
  refusal: null;
}

/** One LogprobItem as an OpenAI content entry; null without a log probability to give. */
function entryOf(item: unknown): TokenLogprob | null {
  if (!isRecord(item) || !Array.isArray(item.logprobs)) return null;
  const values = item.logprobs.filter((value: unknown): value is number => typeof value === 'number' && Number.isFinite(value));
  if (values.length === 0) return null;
  const text = typeof item.text === 'string' ? item.text : null;
  return {
    token: text ?? '',
    logprob: values.reduce((sum, value) => sum + value, 0),
    bytes: text === null ? null : [...Buffer.from(text, 'utf8')],
    top_logprobs: [],
  };
}

/** A whole answer's `logprobs` (a list of LogprobItem) as OpenAI's choice logprobs; null when it has none. */
export function logprobsFromCohere(items: unknown): CohereLogprobs | null {
  if (!Array.isArray(items)) return null;
  const content = items.map(entryOf).filter((entry): entry is TokenLogprob => entry !== null);
  return { content, refusal: null };
}

/** A stream's content-delta `logprobs` (one LogprobItem) as a chunk choice's logprobs; null when it has none. */
export function chunkLogprobsFromCohere(item: unknown): CohereLogprobs | null {
  const entry = entryOf(item);
  return entry === null ? null : { content: [entry], refusal: null };
}

/**
 * OpenAI's `logprobs` and `top_logprobs` for Cohere: `logprobs: true` is Cohere's own field. Cohere gives no
 * alternatives, so `top_logprobs` above 0 is refused with a 400 naming it, as Claude's adapter refuses `logprobs` it
 * cannot give, rather than answered with empty alternatives that would look like a provider fault; 0 asks for none.
 */
export function cohereLogprobs(request: ChatCompletionRequest): { logprobs?: true } {
  if (typeof request.top_logprobs === 'number' && request.top_logprobs > 0) {
    throw gatewayError(
      'unsupported_parameter',
      "cohere: top_logprobs is not supported: Cohere's Chat API returns the log probability of each generated token but no alternatives. Leave top_logprobs out (or 0) to get the tokens' log probabilities.",
      { param: 'top_logprobs' },
    );
  }
  return request.logprobs === true ? { logprobs: true } : {};
}

/**
 * The request without `top_logprobs`, for a dialect that promises none when the provider gives none (the Responses
 * API's `top_logprobs`): the tokens' log probabilities still come, each with no alternatives.
 */
export function withoutTopLogprobs(request: ChatCompletionRequest): ChatCompletionRequest {
  if (request.top_logprobs === undefined) return request;
  const { top_logprobs: _top, ...rest } = request;
  return rest as ChatCompletionRequest;
}
