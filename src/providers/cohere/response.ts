import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletion, CompletionUsage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput, UPSTREAM_MESSAGE_CHARS } from '../../core/quote-input.js';
import { logprobsFromCohere } from './logprobs.js';

/** Cohere v2 answers -> OpenAI chat.completion: content, tool calls, finish reason and usage. */

type Json = Record<string, unknown>;

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/**
 * Cohere reports `billed_units` (what it charges) and `tokens` (all it processed, including the tokens it adds
 * itself, which "you are not charged for", docs.cohere.com "How Does Cohere's Pricing Work?"). Spend and budgets
 * must match the bill, so billed units win and `tokens` is the fallback (genai-prices reads billed_units too).
 * `cached_tokens` are prompt tokens that hit Cohere's cache, a part of the input (Cohere never reports cache
 * writes); they are kept within the prompt they are a part of.
 */
export function cohereUsage(usage: unknown): CompletionUsage | null {
  if (!isRecord(usage)) return null;
  const tokens = isRecord(usage.tokens) ? usage.tokens : {};
  const billed = isRecord(usage.billed_units) ? usage.billed_units : {};
  const input = num(billed.input_tokens) ?? num(tokens.input_tokens);
  const output = num(billed.output_tokens) ?? num(tokens.output_tokens);
  if (input === undefined && output === undefined) return null;
  const prompt = input ?? 0;
  const completion = output ?? 0;
  const result: CompletionUsage = { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  const cached = num(usage.cached_tokens);
  if (cached !== undefined && cached > 0) result.prompt_tokens_details = { cached_tokens: Math.min(cached, prompt) };
  return result;
}

const FINISH: Record<string, string> = {
  COMPLETE: 'stop',
  STOP_SEQUENCE: 'stop',
  MAX_TOKENS: 'length',
  TOOL_CALL: 'tool_calls',
};

/**
 * OpenAI's finish reason for Cohere's. ERROR and TIMEOUT mean the generation broke off: that is a failed
 * upstream call, not an answer, so they become a retryable 502, with Cohere's own words when it sent them (a
 * stream's message-end carries them as `delta.error`).
 */
export function finishReason(provider: string, reason: unknown, error?: unknown): string {
  if (typeof reason === 'string' && FINISH[reason]) return FINISH[reason];
  if (reason === 'ERROR' || reason === 'TIMEOUT') {
    // A generation that timed out upstream is still a 502 here: the upstream answered, with a broken answer.
    const said = typeof error === 'string' && error.trim() !== '' ? `: ${quoteInput(error.trim(), UPSTREAM_MESSAGE_CHARS)}` : '';
    throw gatewayError('upstream_generation_error', `${provider}: the generation ended with finish_reason ${reason}; the answer is incomplete${said === '' ? '.' : said}`);
  }
  return 'stop';
}

/**
 * Cohere's STOP_SEQUENCE is `stop` to OpenAI, which cannot tell it from a natural end: the choice is marked
 * `stopped_at_stop_sequence` for a client whose format tells them apart (Anthropic's stop_reason `stop_sequence`,
 * see matchedStopSequence). Cohere does not say which sequence it was.
 */
export function stopSequenceMark(reason: unknown): { stopped_at_stop_sequence?: true } {
  return reason === 'STOP_SEQUENCE' ? { stopped_at_stop_sequence: true } : {};
}

function invalid(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

/** The text of the content parts of `type`: `text`, or a reasoning model's `thinking` (each in the field of its type's name). */
function contentText(content: unknown, type: 'text' | 'thinking' = 'text'): string {
  if (typeof content === 'string') return type === 'text' ? content : '';
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) if (isRecord(part) && part.type === type && typeof part[type] === 'string') text += part[type] as string;
  return text;
}

function openAIToolCalls(calls: unknown): Json[] {
  if (!Array.isArray(calls)) return [];
  return calls.filter(isRecord).map((call) => {
    const fn = isRecord(call.function) ? call.function : {};
    return {
      id: call.id,
      type: 'function',
      function: { name: fn.name, arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}) },
    };
  });
}

export function cohereCompletion(body: unknown, provider: string, model: string): ChatCompletion {
  if (!isRecord(body) || !isRecord(body.message)) throw invalid(provider, 'a chat response without a message');
  const message = body.message;
  const text = contentText(message.content);
  // A reasoning model's thinking parts (Command A Reasoning thinks by default) are its reasoning, not its answer:
  // kept apart as `reasoning_content`, as the other adapters keep thinking, so a dialect can show them as such.
  const reasoning = contentText(message.content, 'thinking');
  const calls = openAIToolCalls(message.tool_calls);
  // With tool calls Cohere puts its explanation in tool_plan; OpenAI clients expect it as content.
  const plan = typeof message.tool_plan === 'string' ? message.tool_plan : '';
  const content = calls.length > 0 ? text || plan || null : text;
  const usage = cohereUsage(body.usage);
  return {
    id: typeof body.id === 'string' ? body.id : `chatcmpl-${Date.now()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, ...(reasoning !== '' ? { reasoning_content: reasoning } : {}), ...(calls.length > 0 ? { tool_calls: calls } : {}), refusal: null },
        finish_reason: finishReason(provider, body.finish_reason),
        // The tokens' log probabilities, when asked for (see logprobs.ts).
        logprobs: logprobsFromCohere(body.logprobs),
        ...stopSequenceMark(body.finish_reason),
      },
    ],
    ...(usage ? { usage } : {}),
  };
}
