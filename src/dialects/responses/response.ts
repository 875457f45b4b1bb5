import { randomBytes } from 'node:crypto';
import type { ChatCompletion, CompletionUsage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { valueText } from '../../core/quote-input.js';
import { responseUsageOf } from '../../wire/openai-responses/usage.js';
import type { ResponsesRequest } from './parse-request.js';
import { encryptedThinking, TRANSLATED_REASONING_PREFIX } from '../../wire/openai-responses/translated-reasoning.js';
import { encryptedSignature, thoughtSignatureOf } from './gemini-signatures.js';

type Json = Record<string, unknown>;

/** What the reply needs from the request: the model name the client sent, and the fields a Response echoes. */
export interface ReplyContext {
  model: string;
  body: ResponsesRequest;
  /** tollgate keeps the Response (store not false, see ResponseStore): it says store: true. */
  stored?: boolean;
  /** The stored Response this turn continued (its body then holds the whole conversation instead of the id). */
  previousResponseId?: string | null;
}

/**
 * Random bytes for ids, drawn 4 KiB at a time: a randomBytes call for each id cost 3 µs, and every item of a Responses
 * input is given an id before anything else reads it, so a million items held the event loop 3 s for ids alone.
 */
const ID_POOL_BYTES = 4096;
let idPool = Buffer.alloc(0);
let idPoolUsed = 0;

/** An id with OpenAI's prefix for its kind (`resp`, `msg`, `fc`, `call`) and 16 random bytes. */
export function newId(prefix: string): string {
  if (idPoolUsed + 16 > idPool.length) {
    idPool = randomBytes(ID_POOL_BYTES);
    idPoolUsed = 0;
  }
  const hex = idPool.toString('hex', idPoolUsed, idPoolUsed + 16);
  idPoolUsed += 16;
  return `${prefix}_${hex}`;
}

/**
 * A Response with no output yet (`in_progress`): the request's settings echoed as OpenAI's Response echoes them,
 * their defaults where the request left them out. `store` says whether tollgate keeps it for a later
 * previous_response_id (the provider that answered keeps nothing).
 */
export function responseShell(reply: ReplyContext, id: string, createdAt: number): Json {
  const { body } = reply;
  const reasoning = isRecord(body.reasoning) ? body.reasoning : {};
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status: 'in_progress',
    background: false,
    error: null,
    incomplete_details: null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model: reply.model,
    output: [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: reply.previousResponseId ?? null,
    reasoning: { effort: reasoning.effort ?? null, summary: reasoning.summary ?? null },
    store: reply.stored === true,
    temperature: body.temperature ?? 1,
    text: body.text ?? { format: { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? 1,
    truncation: body.truncation ?? 'disabled',
    usage: null,
    user: body.user ?? null,
    metadata: body.metadata ?? {},
  };
}

/** The Response status a chat finish reason stands for, and why it is incomplete when it is. */
export function finishedStatus(finishReason: unknown): { status: 'completed' | 'incomplete'; incomplete_details: Json | null } {
  if (finishReason === 'length') return { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } };
  if (finishReason === 'content_filter') return { status: 'incomplete', incomplete_details: { reason: 'content_filter' } };
  return { status: 'completed', incomplete_details: null };
}

/**
 * The status of the output item at `index` of `count`: the last one (the item the model was writing when the answer
 * was cut) is `incomplete` when the Response is, as OpenAI marks the message or function call a max_output_tokens or
 * content filter stop interrupted; every other item is whole.
 */
export function itemStatus(finishReason: unknown, index: number, count: number): 'completed' | 'incomplete' {
  return index === count - 1 ? finishedStatus(finishReason).status : 'completed';
}

/**
 * A Response finished: its status, output and usage set on a copy of the shell. `completed_at` only when it is
 * completed (OpenAI: "Only present when the status is `completed`"), else null.
 */
export function finishedResponse(shell: Json, output: Json[], finishReason: unknown, usage: CompletionUsage | null): Json {
  const finished = finishedStatus(finishReason);
  const completedAt = finished.status === 'completed' ? Math.floor(Date.now() / 1000) : null;
  return { ...shell, ...finished, completed_at: completedAt, output, usage: usage ? responseUsageOf(usage) : null };
}

/** An assistant message item holding one output_text part, or the parts given. */
export function messageItem(id: string, text: string, status: string, content: Json[] = [outputText(text)]): Json {
  return { id, type: 'message', status, role: 'assistant', content };
}

/** A refusal content part: the model declined, in its own words (OpenAI's `refusal`). */
export function refusalPart(refusal: string): Json {
  return { type: 'refusal', refusal };
}

/** An output_text part; `logprobs` as chat completions gives them per token (the Responses API's LogProb shape). */
export function outputText(text: string, logprobs: unknown[] = []): Json {
  return { type: 'output_text', annotations: [], logprobs, text };
}

/** The per-token log probabilities of a chat choice or chunk choice's content (asked for with logprobs), else none. */
export function contentLogprobs(choice: Json): unknown[] {
  return isRecord(choice.logprobs) && Array.isArray(choice.logprobs.content) ? choice.logprobs.content : [];
}

/**
 * A reasoning item showing the model's reasoning (Anthropic's thinking, Gemini's thoughts) as its summary text, as
 * OpenAI shows a reasoning summary. Claude's signed thinking rides in its encrypted_content (see encryptedThinking),
 * which goes back to Claude on a later turn (see messagesOf); any other provider, OpenAI too, never gets the item (its
 * id's prefix says tollgate wrote it, see withoutTranslatedReasoning).
 */
export function reasoningItem(id: string, text: string | null, encrypted?: string): Json {
  return { id, type: 'reasoning', summary: text === null ? [] : [summaryText(text)], ...(encrypted === undefined ? {} : { encrypted_content: encrypted }) };
}

/**
 * A reasoning item carrying Gemini's thought signature of one function call in its encrypted_content (see
 * encryptedSignature), without a summary: read back by messagesOf when the client sends it again, and, like any
 * reasoning item tollgate wrote, never sent to another provider.
 */
export function signatureItem(callId: string, signature: string): Json {
  return reasoningItem(newId(TRANSLATED_REASONING_PREFIX), null, encryptedSignature(callId, signature));
}

export function summaryText(text: string): Json {
  return { type: 'summary_text', text };
}

export function functionCallItem(id: string, callId: string, name: string, args: string, status: string): Json {
  return { id, type: 'function_call', status, arguments: args, call_id: callId, name };
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

/**
 * A canonical completion as a Response (for an answer translated from another format, or made by a stage): the
 * model's reasoning as a reasoning item's summary, the message's text (and refusal) as a message item's parts, each tool call as a function_call item with its
 * call_id, the finish reason as the status (a length stop is `incomplete`, max_output_tokens, and so is the last item,
 * the one it cut), and the usage.
 */
export function responseOf(completion: ChatCompletion, reply: ReplyContext): Json {
  const choice = isRecord(completion.choices[0]) ? completion.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const output: Json[] = [];
  const reasoning = message.reasoning_content ?? message.reasoning;
  const signed = encryptedThinking(Array.isArray(message.thinking_blocks) ? message.thinking_blocks : []);
  if ((typeof reasoning === 'string' && reasoning !== '') || signed !== undefined) {
    output.push(reasoningItem(newId(TRANSLATED_REASONING_PREFIX), typeof reasoning === 'string' ? reasoning : '', signed));
  }
  const text = contentText(message.content);
  const refusal = typeof message.refusal === 'string' && message.refusal !== '' ? message.refusal : null;
  const calls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isRecord) : [];
  const parts = [...(text !== '' || (refusal === null && calls.length === 0) ? [outputText(text, contentLogprobs(choice))] : []), ...(refusal === null ? [] : [refusalPart(refusal)])];
  // A cut answer's last item (the message, or the last call after it) is the one the stop interrupted.
  if (parts.length > 0) output.push(messageItem(newId('msg'), text, calls.length === 0 ? itemStatus(choice.finish_reason, 0, 1) : 'completed', parts));
  for (const [i, call] of calls.entries()) {
    const fn = isRecord(call.function) ? call.function : {};
    const callId = typeof call.id === 'string' && call.id !== '' ? call.id : newId('call');
    // Gemini's thought signature of the call, in a reasoning item just before it, as the stream writes it.
    const signature = thoughtSignatureOf(call);
    if (signature !== undefined) output.push(signatureItem(callId, signature));
    output.push(functionCallItem(newId('fc'), callId, valueText(fn.name ?? ''), typeof fn.arguments === 'string' ? fn.arguments : '', itemStatus(choice.finish_reason, i, calls.length)));
  }
  const shell = responseShell(reply, newId('resp'), typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000));
  return finishedResponse(shell, output, choice.finish_reason, completion.usage ?? null);
}
