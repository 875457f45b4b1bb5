import type { ChatCompletionChunk, CompletionUsage } from '../../core/canonical.js';
import type { StreamDecoder } from '../../core/provider.js';
import { createSSEDecoder } from '../sse-decoder.js';
import { KeptEvents } from '../kept-events.js';
import { geminiStreamError } from './errors.js';
import { finishReasonFromGemini, unmetFinishReason } from '../../wire/gemini/finish-reasons.js';
import { completionId } from './ids.js';
import { logprobsFromGemini } from './logprobs.js';
import { blockedPrompt, toolCallFromPart } from './response.js';
import { usageFromGemini } from '../../wire/gemini/usage.js';
import { isRecord } from '../../core/is-record.js';
import { gatewayError } from '../../core/errors.js';

interface CandidateState {
  toolCalls: number;
  finished: boolean;
}

/**
 * Turns Gemini's `alt=sse` body into OpenAI chunks. Every event is a whole GenerateContentResponse holding the
 * next parts; there is no terminator, so the stream counts as complete when every candidate seen had its
 * finishReason before the body ended. Function calls arrive whole and go out as one tool_calls delta at once. The
 * latest usageMetadata (the last event carries the totals) becomes the final usage chunk when the client asked for
 * include_usage, and is reported to the gateway for cost either way. Before the end it is `usageSoFar` (each event's
 * counts are running totals: the prompt and its cached part from the first event on), for charging a stream cut short.
 */
export function createGeminiStreamDecoder(model: string, provider: string, includeUsage = true, options: { keepEvents?: boolean } = {}): StreamDecoder {
  /** Native pass-through: every event as it came, for `takeNative`; null when not passing through. */
  const kept = options.keepEvents === true ? new KeptEvents() : null;
  let id: string | null = null;
  const created = Math.floor(Date.now() / 1000);
  const candidates = new Map<number, CandidateState>();
  let usage: CompletionUsage | null = null;
  /** The prompt was blocked (no candidate): the answer is whole, the content_filter finish made up for it. */
  let blocked = false;

  /**
   * Whether the answer is whole: every candidate seen has its finishReason (one that finished says nothing of the
   * others: with candidateCount 2, a stream cut after candidate 0's STOP lost the rest of candidate 1).
   */
  const complete = (): boolean => candidates.size > 0 && [...candidates.values()].every((state) => state.finished);

  const chunk = (choices: unknown[]): ChatCompletionChunk => ({ id: id ?? completionId(null), object: 'chat.completion.chunk', created, model, choices });
  const delta = (index: number, value: Record<string, unknown>, finish: string | null = null): ChatCompletionChunk =>
    chunk([{ index, delta: value, finish_reason: finish, logprobs: null }]);

  /** The state of a candidate, emitting its role chunk first when it is new. */
  const open = (index: number, out: ChatCompletionChunk[]): CandidateState => {
    let state = candidates.get(index);
    if (!state) {
      state = { toolCalls: 0, finished: false };
      candidates.set(index, state);
      out.push(delta(index, { role: 'assistant', content: '' }));
    }
    return state;
  };

  const mapCandidate = (candidate: Record<string, unknown>, position: number, out: ChatCompletionChunk[]): void => {
    const index = typeof candidate.index === 'number' ? candidate.index : position;
    const state = open(index, out);
    if (state.finished) return;
    const content = candidate.content;
    const parts = isRecord(content) && Array.isArray(content.parts) ? content.parts : [];
    // The event's log probabilities (its tokens' only) go with its answer text, as OpenAI sends them with each chunk.
    const logprobs = logprobsFromGemini(candidate.logprobsResult);
    let answered = false;
    for (const part of parts) {
      if (!isRecord(part)) continue;
      if (typeof part.text === 'string') {
        if (part.text === '') continue;
        const answer = part.thought !== true;
        out.push(delta(index, answer ? { content: part.text } : { reasoning_content: part.text }));
        if (answer && logprobs !== null && !answered) Object.assign(out.at(-1)?.choices[0] as object, { logprobs });
        answered ||= answer;
        continue;
      }
      const call = toolCallFromPart(part);
      if (call) out.push(delta(index, { tool_calls: [{ index: state.toolCalls++, ...call }] }));
    }
    if (typeof candidate.finishReason === 'string' && candidate.finishReason !== 'FINISH_REASON_UNSPECIFIED') {
      state.finished = true;
      const finish = delta(index, {}, finishReasonFromGemini(candidate.finishReason, state.toolCalls > 0));
      const unmet = unmetFinishReason(candidate.finishReason);
      if (unmet !== null) Object.assign(finish.choices[0] as object, { native_finish_reason: unmet });
      out.push(finish);
    }
  };

  const decoder = createSSEDecoder((event) => {
    let body: unknown;
    try {
      body = JSON.parse(event.data);
    } catch {
      throw gatewayError('invalid_upstream_response', `${provider}: upstream sent a stream event that is not JSON`);
    }
    const root = Array.isArray(body) ? body[0] : body;
    if (!isRecord(root)) return null;
    if (root.error) throw geminiStreamError(provider, root);
    kept?.push(event.event ?? '', event.data);
    id ??= completionId(root.responseId);
    const out: ChatCompletionChunk[] = [];
    const list = Array.isArray(root.candidates) ? root.candidates.filter(isRecord) : [];
    list.forEach((candidate, position) => mapCandidate(candidate, position, out));
    if (list.length === 0 && blockedPrompt(root) && !blocked && !complete()) {
      open(0, out).finished = true;
      blocked = true;
      out.push(delta(0, {}, 'content_filter'));
    }
    usage = usageFromGemini(root.usageMetadata) ?? usage;
    return out;
  });

  const streamDecoder: StreamDecoder = {
    push: (bytes) => decoder.push(bytes),
    end() {
      const tail = decoder.end();
      const chunks = [...tail.chunks];
      // Only a client that asked gets OpenAI's usage chunk (no choices); the gateway gets the usage either way.
      if (usage && includeUsage) chunks.push({ ...chunk([]), usage });
      return { chunks, complete: complete(), usage };
    },
    usageSoFar: () => usage,
  };
  if (kept !== null) streamDecoder.takeNative = () => kept.take();
  return streamDecoder;
}
