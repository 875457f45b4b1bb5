import type { GatewayError } from '../../core/errors.js';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput, UPSTREAM_MESSAGE_CHARS } from '../../core/quote-input.js';

/**
 * Finish reasons of OpenAI-compatible vendors that OpenAI's API has another word for. Mistral ends an answer the
 * model's context window cut with `model_length` (its FinishReason: stop, length, model_length, error, tool_calls),
 * which every reader of the canonical form took for a natural end: the /anthropic renderer said `end_turn`, the
 * Responses renderer `completed`, Gemini's `STOP`. It is OpenAI's `length`, as Converse's model_context_window_exceeded
 * and Anthropic's are. A client of the OpenAI format that gets the upstream's own bytes still reads Mistral's word.
 */
const OPENAI_FINISH: Readonly<Record<string, string>> = { model_length: 'length' };

/** Rewrites, in place, each choice's finish_reason that OpenAI names otherwise (see OPENAI_FINISH). */
export function normalizeFinishReasons(choices: readonly unknown[]): void {
  for (const choice of choices) {
    if (!isRecord(choice) || typeof choice.finish_reason !== 'string') continue;
    if (Object.hasOwn(OPENAI_FINISH, choice.finish_reason)) choice.finish_reason = OPENAI_FINISH[choice.finish_reason];
  }
}

/**
 * Finish reasons that say the generation broke off: Mistral's `error`, and DeepSeek's `insufficient_system_resource`
 * ("the request is interrupted due to insufficient resource of the inference system").
 */
const BROKEN_OFF: ReadonlySet<unknown> = new Set(['error', 'insufficient_system_resource']);

/**
 * The failure an answer's finish_reason `error` reports (Mistral's, when the generation broke off; DeepSeek's
 * insufficient_system_resource alike, see BROKEN_OFF), else null. OpenAI's
 * API has no such reason and no client reads one: the /anthropic renderer took it for `end_turn`, the Responses one
 * for a `completed` response, so half an answer passed for a whole one. As Cohere's ERROR, it is a failed upstream
 * call: a retryable 502 another attempt or target may answer, charged the usage the upstream reported with it. The
 * error a choice carries beside it (OpenRouter's) says why, in the message.
 */
export function failedGeneration(provider: string, choices: readonly unknown[]): GatewayError | null {
  const failed = choices.find((choice) => isRecord(choice) && BROKEN_OFF.has(choice.finish_reason));
  if (!isRecord(failed)) return null;
  // OpenRouter writes why beside it, as the choice's `error` (its ErrorResponse: code, message, metadata).
  const said = isRecord(failed.error) && typeof failed.error.message === 'string' && failed.error.message !== '' ? failed.error.message : null;
  const why = said === null ? '' : ` (${quoteInput(said, UPSTREAM_MESSAGE_CHARS)})`;
  return gatewayError('upstream_generation_error', `${provider}: the generation ended with finish_reason ${String(failed.finish_reason)}${why}; the answer is incomplete.`);
}
