import { randomUUID } from 'node:crypto';
import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletion, CompletionUsage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { tokenCount as tokens, usageWithCacheParts } from '../../core/usage.js';
import { gatewayError } from '../../core/errors.js';


/** A token count as TokenUsage documents it: a non-negative integer. */
function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * Converse's `inputTokens` counts only the uncached part of the prompt; cache reads and writes come on top.
 * The canonical prompt_tokens is the whole prompt, so the three are added. A usage without both required counts
 * (missing, strings, absurd numbers) is no usage (null): read as 0 it made the answer free, where without one the
 * gateway counts the request itself.
 */
export function usageFromConverse(usage: unknown): CompletionUsage | null {
  if (!isRecord(usage) || !isCount(usage.inputTokens) || !isCount(usage.outputTokens)) return null;
  return usageWithCacheParts(tokens(usage.inputTokens), tokens(usage.cacheReadInputTokens), tokens(usage.cacheWriteInputTokens), tokens(usage.outputTokens));
}

const FINISH_REASONS: Record<string, string> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  guardrail_intervened: 'content_filter',
  content_filtered: 'content_filter',
};

export function finishReason(stopReason: unknown): string {
  return (typeof stopReason === 'string' && FINISH_REASONS[stopReason]) || 'stop';
}

/**
 * Converse's stopReason when the turn did not end as the model meant and OpenAI's finish reasons have no word for it
 * (malformed_model_output, malformed_tool_use: output or a tool call the model botched), else null. finishReason says
 * `stop` for those, so the adapter puts this beside it as the choice's `native_finish_reason`, as it does for
 * Gemini's MALFORMED_FUNCTION_CALL: the client can tell a failed turn from a finished one, and the cache keeps none.
 */
export function unmetStopReason(stopReason: unknown): string | null {
  return typeof stopReason === 'string' && stopReason !== '' && !Object.hasOwn(FINISH_REASONS, stopReason) ? stopReason : null;
}

/**
 * Whether Converse's stopReason says one of the request's stop sequences ended the answer, which OpenAI's `stop` cannot
 * tell from a natural end: the choice is marked `stopped_at_stop_sequence` for a client whose format tells them apart
 * (Anthropic's stop_reason `stop_sequence`, see matchedStopSequence). Converse does not say which sequence it was.
 */
export function stopSequenceReached(stopReason: unknown): boolean {
  return stopReason === 'stop_sequence';
}

export function completionId(): string {
  return `chatcmpl-${randomUUID().replace(/-/g, '')}`;
}

function invalid(provider: string, what: string): GatewayError {
  return gatewayError('invalid_upstream_response', `${provider}: upstream sent ${what}`);
}

interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Maps a Converse answer (`output.message.content` blocks, `stopReason`, `usage`) to a chat.completion. */
export function completionFromConverse(body: unknown, provider: string, model: string): ChatCompletion {
  const message = isRecord(body) && isRecord(body.output) && isRecord(body.output.message) ? body.output.message : null;
  if (!isRecord(body) || !message || !Array.isArray(message.content)) throw invalid(provider, 'a Converse answer without output.message.content');
  let text = '';
  let reasoning = '';
  const calls: ToolCall[] = [];
  for (const block of message.content as unknown[]) {
    if (!isRecord(block)) continue;
    if (typeof block.text === 'string') text += block.text;
    else if (isRecord(block.toolUse)) {
      const use = block.toolUse;
      calls.push({ id: String(use.toolUseId ?? ''), type: 'function', function: { name: String(use.name ?? ''), arguments: JSON.stringify(use.input ?? {}) } });
    } else if (isRecord(block.reasoningContent) && isRecord(block.reasoningContent.reasoningText)) {
      const piece = block.reasoningContent.reasoningText.text;
      if (typeof piece === 'string') reasoning += piece;
    }
  }
  const usage = usageFromConverse(body.usage);
  const unmet = unmetStopReason(body.stopReason);
  return {
    id: completionId(),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text === '' && calls.length > 0 ? null : text,
          ...(reasoning !== '' ? { reasoning_content: reasoning } : {}),
          ...(calls.length > 0 ? { tool_calls: calls } : {}),
          refusal: null,
        },
        finish_reason: finishReason(body.stopReason),
        logprobs: null,
        ...(unmet !== null ? { native_finish_reason: unmet } : {}),
        ...(stopSequenceReached(body.stopReason) ? { stopped_at_stop_sequence: true } : {}),
      },
    ],
    ...(usage ? { usage } : {}),
  };
}
