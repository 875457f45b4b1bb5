import type { ChatCompletion } from '../../core/canonical.js';
import { finishReasonFromGemini, unmetFinishReason } from '../../wire/gemini/finish-reasons.js';
import { completionId, toolCallId } from './ids.js';
import { logprobsFromGemini } from './logprobs.js';
import { usageFromGemini } from '../../wire/gemini/usage.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  /** Where Google's own OpenAI layer keeps a function call's thought signature, for the client to send back. */
  extra_content?: { google: { thought_signature: string } };
}

/** A Gemini functionCall part as an OpenAI tool call with a fresh id. */
export function toolCallFromPart(part: Record<string, unknown>): OpenAIToolCall | null {
  const call = part.functionCall;
  if (!isRecord(call) || typeof call.name !== 'string') return null;
  const out: OpenAIToolCall = { id: toolCallId(), type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } };
  if (typeof part.thoughtSignature === 'string') out.extra_content = { google: { thought_signature: part.thoughtSignature } };
  return out;
}

/** The parts of one candidate's content, split into answer text, thought text and tool calls. */
export interface CandidateParts {
  text: string;
  thoughts: string;
  toolCalls: OpenAIToolCall[];
}

export function splitParts(candidate: Record<string, unknown>): CandidateParts {
  const out: CandidateParts = { text: '', thoughts: '', toolCalls: [] };
  const content = candidate.content;
  const parts = isRecord(content) && Array.isArray(content.parts) ? content.parts : [];
  for (const part of parts) {
    if (!isRecord(part)) continue;
    if (typeof part.text === 'string') {
      // Thought summaries are reasoning, never part of the answer.
      if (part.thought === true) out.thoughts += part.text;
      else out.text += part.text;
      continue;
    }
    const call = toolCallFromPart(part);
    if (call) out.toolCalls.push(call);
  }
  return out;
}

function choiceOf(candidate: Record<string, unknown>, position: number): Record<string, unknown> {
  const { text, thoughts, toolCalls } = splitParts(candidate);
  const message: Record<string, unknown> = { role: 'assistant', content: text === '' && toolCalls.length > 0 ? null : text, refusal: null };
  if (thoughts !== '') message.reasoning_content = thoughts;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  const choice: Record<string, unknown> = {
    index: typeof candidate.index === 'number' ? candidate.index : position,
    message,
    finish_reason: finishReasonFromGemini(candidate.finishReason, toolCalls.length > 0),
    logprobs: logprobsFromGemini(candidate.logprobsResult),
  };
  const unmet = unmetFinishReason(candidate.finishReason);
  if (unmet !== null) choice.native_finish_reason = unmet;
  return choice;
}

/** Whether Gemini refused the prompt itself (`promptFeedback.blockReason`), so no candidate was generated. */
export function blockedPrompt(body: Record<string, unknown>): boolean {
  return isRecord(body.promptFeedback) && typeof body.promptFeedback.blockReason === 'string';
}

/**
 * A GenerateContentResponse → an OpenAI chat.completion. A prompt blocked before generation is a filtered, empty
 * answer. A response with neither a candidate nor a block reason is no answer at all: it fails the attempt
 * (502 invalid_upstream_response, retryable, so a fallback can answer), as a stream without an answer event does,
 * instead of becoming an empty `stop` answer that the cache would keep.
 */
export function completionFromGemini(body: unknown, model: string, provider: string): ChatCompletion {
  if (!isRecord(body)) {
    throw gatewayError('invalid_upstream_response', `${provider}: upstream sent a response that is not an object`);
  }
  const candidates = Array.isArray(body.candidates) ? body.candidates.filter(isRecord) : [];
  if (candidates.length === 0 && !blockedPrompt(body)) {
    throw gatewayError('invalid_upstream_response', `${provider}: the upstream answered without any candidate and without a promptFeedback.blockReason.`);
  }
  const choices =
    candidates.length > 0
      ? candidates.map(choiceOf)
      : [{ index: 0, message: { role: 'assistant', content: '', refusal: null }, finish_reason: 'content_filter', logprobs: null }];
  const completion: ChatCompletion = {
    id: completionId(body.responseId),
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices,
  };
  const usage = usageFromGemini(body.usageMetadata);
  if (usage) completion.usage = usage;
  return completion;
}
