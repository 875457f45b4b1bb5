import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletionChunk, CompletionUsage } from '../../core/canonical.js';
import { googleErrorBody } from './errors.js';
import { finishReasonOf, functionCallPart, geminiResponseId, thoughtSignatureOf, unwrapAnswer, type GeminiReplyContext } from './response.js';
import { geminiUsageMetadata } from '../../wire/gemini/usage.js';
import { type Json } from '../../wire/gemini/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { geminiLogprobs } from './logprobs.js';

/** One event as Gemini's `alt=sse` framing writes it. */
export function sseFrame(event: Json): string {
  return `data: ${JSON.stringify(event)}\r\n\r\n`;
}

/** A failure after the stream began: Google's error object as the last event (the SDK raises it as an ApiError). */
export function errorEvent(error: GatewayError): Json {
  return googleErrorBody(error) as unknown as Json;
}

interface BufferedCall {
  id: unknown;
  name: string;
  args: string;
  signature: unknown;
}

interface Candidate {
  parts: Json[];
  finishReason: string | null;
  /** The logprobs of this event's tokens (responseLogprobs), as Gemini's streamed candidates carry them. */
  logprobs?: ReturnType<typeof geminiLogprobs>;
}

/**
 * Renders canonical chunks as Gemini's stream: one GenerateContentResponse per chunk that carries content. Gemini
 * sends function calls whole, so a call's argument fragments are buffered until its choice finishes. A finished
 * choice is held back too: Gemini's last event carries both the finishReason and the usageMetadata, and the
 * usage comes in the canonical stream's final, choice-less chunk, so the finished candidates go out at end().
 */
export class GeminiStreamRenderer {
  private readonly calls = new Map<number, Map<number, BufferedCall>>();
  private readonly finished = new Map<number, Candidate>();
  /** A wrapped answer's text (GeminiReplyContext.wrappedAnswer) by choice, unwrapped once the choice finishes. */
  private readonly wrapped = new Map<number, string>();
  /** The choices whose content went out, which end() finishes when the upstream never did (see end()). */
  private readonly open = new Set<number>();
  private usage: CompletionUsage | null = null;
  private responseId = '';

  constructor(private readonly reply: GeminiReplyContext) {}

  push(chunk: ChatCompletionChunk): Json[] {
    if (this.responseId === '') this.responseId = geminiResponseId(chunk.id);
    if (chunk.usage) this.usage = chunk.usage;
    const candidates: Json[] = [];
    chunk.choices.forEach((choice, position) => {
      if (!isRecord(choice)) return;
      const index = typeof choice.index === 'number' ? choice.index : position;
      const delta = isRecord(choice.delta) ? choice.delta : {};
      const parts: Json[] = [];
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (this.reply.includeThoughts && typeof reasoning === 'string' && reasoning !== '') parts.push({ text: reasoning, thought: true });
      // A refusal (OpenAI's structured outputs) streams in its own field: the answer's text, as in a whole answer.
      if (this.reply.wrappedAnswer && typeof delta.content === 'string') this.wrapped.set(index, (this.wrapped.get(index) ?? '') + delta.content);
      else if (typeof delta.content === 'string' && delta.content !== '') parts.push({ text: delta.content });
      if (typeof delta.refusal === 'string' && delta.refusal !== '') parts.push({ text: delta.refusal });
      if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) this.buffer(index, call);
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        const held = this.finished.get(index);
        parts.push(...this.takeWrapped(index));
        this.finished.set(index, { parts: [...(held?.parts ?? []), ...parts, ...this.takeCalls(index)], finishReason: finishReasonOf(choice, this.reply), logprobs: geminiLogprobs(choice.logprobs) });
      } else if (parts.length > 0) {
        this.open.add(index);
        candidates.push(this.candidate(index, { parts, finishReason: null, logprobs: geminiLogprobs(choice.logprobs) }));
      }
    });
    return candidates.length > 0 ? [this.event(candidates)] : [];
  }

  /** The last event: the finished candidates (with any calls still buffered) and the usage. None when nothing is left to say. */
  end(): Json[] {
    for (const index of this.wrapped.keys()) {
      if (!this.finished.has(index)) this.finished.set(index, { parts: this.takeWrapped(index), finishReason: 'STOP' });
    }
    for (const index of this.calls.keys()) {
      if (!this.finished.has(index)) this.finished.set(index, { parts: this.takeCalls(index), finishReason: 'STOP' });
    }
    // A stream that ended without a finish_reason (some OpenAI-compatible servers) still ends each candidate, as
    // Gemini's last event always does: @google/genai's chats keep a streamed turn only when an event finishes it.
    for (const index of this.open) {
      if (!this.finished.has(index)) this.finished.set(index, { parts: [], finishReason: 'STOP' });
    }
    this.open.clear();
    const candidates = [...this.finished.entries()].sort(([a], [b]) => a - b).map(([index, candidate]) => this.candidate(index, candidate));
    this.finished.clear();
    const usage = geminiUsageMetadata(this.usage);
    if (candidates.length === 0 && !usage) return [];
    return [this.event(candidates, usage)];
  }

  private buffer(choice: number, call: unknown): void {
    if (!isRecord(call)) return;
    let calls = this.calls.get(choice);
    if (!calls) {
      calls = new Map();
      this.calls.set(choice, calls);
    }
    const index = typeof call.index === 'number' ? call.index : calls.size;
    const fn = isRecord(call.function) ? call.function : {};
    let buffered = calls.get(index);
    if (!buffered) {
      buffered = { id: call.id, name: '', args: '', signature: undefined };
      calls.set(index, buffered);
    }
    // A name is whole in whichever delta has it, never a piece to append: some providers (Fireworks, NVIDIA NIM)
    // repeat it in every delta of the call. OpenAI's SDK takes it so too.
    if (typeof fn.name === 'string' && fn.name !== '') buffered.name = fn.name;
    if (typeof fn.arguments === 'string') buffered.args += fn.arguments;
    buffered.signature ??= thoughtSignatureOf(call);
    buffered.id ??= call.id;
  }

  /** A wrapped answer whole, which can be unwrapped only once it is all there. */
  private takeWrapped(choice: number): Json[] {
    const text = this.wrapped.get(choice);
    this.wrapped.delete(choice);
    return text && this.reply.wrappedAnswer ? [{ text: unwrapAnswer(text, this.reply.wrappedAnswer) }] : [];
  }

  private takeCalls(choice: number): Json[] {
    const calls = this.calls.get(choice);
    if (!calls) return [];
    this.calls.delete(choice);
    return [...calls.entries()]
      .sort(([a], [b]) => a - b)
      .flatMap(([, call]) => {
        const part = functionCallPart(call.id, call.name, call.args, call.signature);
        return part ? [part] : [];
      });
  }

  private candidate(index: number, candidate: Candidate): Json {
    // A finish with nothing left to say carries an empty text, as Gemini's last event does: @google/genai's chats keep
    // a streamed turn in their history only when every event's candidate has a part (isValidResponse), so an event
    // with no parts had a chat forget the whole exchange, the user's message with it.
    const parts = candidate.parts.length === 0 && candidate.finishReason !== null ? [{ text: '' }] : candidate.parts;
    const out: Json = { content: { role: 'model', parts }, index };
    if (candidate.finishReason !== null) out.finishReason = candidate.finishReason;
    if (candidate.logprobs) Object.assign(out, candidate.logprobs);
    return out;
  }

  private event(candidates: Json[], usage?: Json): Json {
    const out: Json = { candidates };
    if (usage) out.usageMetadata = usage;
    out.modelVersion = this.reply.model;
    out.responseId = this.responseId;
    return out;
  }
}
