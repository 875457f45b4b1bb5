import type { ChatCompletion } from '../../core/canonical.js';
import { type Json } from '../../wire/gemini/shapes.js';
import { geminiFinishReason } from '../../wire/gemini/finish-reasons.js';
import { geminiUsageMetadata } from '../../wire/gemini/usage.js';
import { isRecord } from '../../core/is-record.js';
import { geminiLogprobs } from './logprobs.js';
import { WRAPPED_ANSWER, type WrappedAnswer } from './request.js';

/** What the reply needs besides the completion. */
export interface GeminiReplyContext {
  /** The model as the client named it in the URL, echoed as `modelVersion`. */
  model: string;
  /** Whether reasoning goes back as `thought: true` parts (`thinkingConfig.includeThoughts`). */
  includeThoughts: boolean;
  /**
   * Whether the answer came from a Gemini-format upstream (Gemini, Vertex AI's Gemini), asked when a choice
   * finishes: only then is a choice's `native_finish_reason` a Gemini finishReason to give back as it is.
   * Another format's (an OpenAI-compatible server relaying OpenRouter's `native_finish_reason: "end_turn"`) is not.
   */
  geminiUpstream?: () => boolean;
  /** The response schema went wrapped in an object (GeminiRequestInfo.wrappedAnswer): the answer is unwrapped so. */
  wrappedAnswer?: WrappedAnswer | null;
}

/**
 * The answer to a wrapped response schema as the client's schema has it: the wrapper's one property, written as
 * JSON, or for `text/x.enum` the bare string value (Gemini answers `Woodwind`, not `"Woodwind"`). Text that is not such a wrapper (an answer stored from a Gemini upstream, which got the schema unwrapped,
 * or a model that ignored the schema) is left as it is.
 */
export function unwrapAnswer(text: string, how: WrappedAnswer): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return text;
  }
  if (!isRecord(parsed) || Object.keys(parsed).length !== 1 || !(WRAPPED_ANSWER in parsed)) return text;
  const value = parsed[WRAPPED_ANSWER];
  return how === 'text' && typeof value === 'string' ? value : JSON.stringify(value);
}

/**
 * A canonical choice's finish as Gemini's finishReason: the upstream's own when a Gemini upstream ended the turn
 * in a way OpenAI has no word for (MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, OTHER, ..., kept by the adapter
 * as `native_finish_reason` beside `stop`), so a client can tell a failed turn from a finished one; else the
 * inverse of the adapter's mapping.
 */
export function finishReasonOf(choice: Json, reply: GeminiReplyContext): string {
  const native = choice.native_finish_reason;
  if (typeof native === 'string' && native !== '' && reply.geminiUpstream?.() === true) return native;
  return geminiFinishReason(choice.finish_reason);
}

/** The upstream's response id when the completion id wraps one (`chatcmpl-<responseId>`, as the Gemini adapter makes them). */
export function geminiResponseId(id: unknown): string {
  if (typeof id !== 'string') return '';
  return id.startsWith('chatcmpl-') ? id.slice('chatcmpl-'.length) : id;
}

/** Parses a tool call's JSON arguments into Gemini's `args` object (anything not an object is wrapped as `{value}`). */
function parseArgs(raw: unknown): Json {
  if (isRecord(raw)) return raw;
  if (typeof raw !== 'string' || raw.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(raw);
    return isRecord(parsed) ? parsed : { value: parsed };
  } catch {
    return { value: raw };
  }
}

/** A canonical tool call as a Gemini functionCall part; its id rides along so a client can answer by id. */
export function functionCallPart(id: unknown, name: unknown, args: unknown, signature: unknown): Json | null {
  if (typeof name !== 'string' || name === '') return null;
  const call: Json = { name, args: parseArgs(args) };
  if (typeof id === 'string' && id !== '') call.id = id;
  const part: Json = { functionCall: call };
  if (typeof signature === 'string' && signature !== '') part.thoughtSignature = signature;
  return part;
}

/** Where the outbound Gemini adapter keeps a call's thought signature (Google's own OpenAI layer does the same). */
export function thoughtSignatureOf(call: Json): unknown {
  const extra = call.extra_content;
  return isRecord(extra) && isRecord(extra.google) ? extra.google.thought_signature : undefined;
}

function messageParts(message: Json, reply: GeminiReplyContext): Json[] {
  const parts: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  if (reply.includeThoughts && typeof reasoning === 'string' && reasoning !== '') parts.push({ text: reasoning, thought: true });
  const content = Array.isArray(message.content)
    ? message.content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('')
    : message.content;
  // A refusal (OpenAI's structured outputs) comes instead of content; Gemini has no field for it, so it is the text.
  if (typeof content === 'string' && content !== '') parts.push({ text: reply.wrappedAnswer ? unwrapAnswer(content, reply.wrappedAnswer) : content });
  else if (typeof message.refusal === 'string' && message.refusal !== '') parts.push({ text: message.refusal });
  if (Array.isArray(message.tool_calls)) {
    for (const call of message.tool_calls) {
      if (!isRecord(call)) continue;
      const fn = isRecord(call.function) ? call.function : {};
      const part = functionCallPart(call.id, fn.name, fn.arguments, thoughtSignatureOf(call));
      if (part) parts.push(part);
    }
  }
  return parts;
}

/** A canonical chat.completion as Gemini's GenerateContentResponse. */
export function generateContentResponse(completion: ChatCompletion, reply: GeminiReplyContext): Json {
  const candidates = completion.choices.filter(isRecord).map((choice, position) => ({
    content: { role: 'model', parts: messageParts(isRecord(choice.message) ? choice.message : {}, reply) },
    finishReason: finishReasonOf(choice, reply),
    // Asked for by responseLogprobs: OpenAI's per-token logprobs as Gemini writes them.
    ...geminiLogprobs(choice.logprobs),
    index: typeof choice.index === 'number' ? choice.index : position,
  }));
  const out: Json = { candidates };
  const usage = geminiUsageMetadata(completion.usage);
  if (usage) out.usageMetadata = usage;
  out.modelVersion = reply.model;
  out.responseId = geminiResponseId(completion.id);
  return out;
}
