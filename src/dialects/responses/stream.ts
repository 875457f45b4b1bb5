import type { ChatCompletionChunk, CompletionUsage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { valueText } from '../../core/quote-input.js';
import { contentLogprobs, finishedResponse, finishedStatus, functionCallItem, messageItem, newId, outputText, reasoningItem, refusalPart, responseShell, signatureItem, summaryText, type ReplyContext } from './response.js';
import { thoughtSignatureOf } from './gemini-signatures.js';
import { encryptedThinking, TRANSLATED_REASONING_PREFIX } from '../../wire/openai-responses/translated-reasoning.js';
import { ArgumentsScan } from '../arguments-scan.js';

type Json = Record<string, unknown>;
type ItemStatus = 'completed' | 'incomplete';

/** An open output item: reasoning or a message whose text is streaming, or a function call whose arguments are. */
type OpenItem =
  | { kind: 'reasoning'; index: number; id: string; text: string; blocks: unknown[] }
  | { kind: 'text'; index: number; id: string; text: string; logprobs: unknown[] }
  | { kind: 'refusal'; index: number; id: string; text: string }
  | ToolCall;

/** A function call: its output index is -1 until its output_item.added goes out. */
interface ToolCall {
  kind: 'tool';
  index: number;
  id: string;
  callId: string;
  name: string;
  args: string;
  /** Its arguments read as they came, to tell when they are whole. */
  scan: ArgumentsScan;
  /** Gemini's thought signature of the call (it comes with the call's first delta), for a reasoning item before it. */
  signature?: string;
}

/** One event in SSE framing, named by its type as OpenAI names its events. */
export function sseFrame(event: Json): string {
  return `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Renders canonical chunks as the Responses API's event stream, in the documented order: response.created and
 * response.in_progress first; per output item output_item.added, then for a message content_part.added, its
 * output_text deltas, output_text.done and content_part.done, for a function call its arguments' deltas and
 * function_call_arguments.done, then output_item.done; response.completed (or response.incomplete) last, with the
 * whole Response and its usage. Every event has its sequence_number. One item is open at a time: text after a tool
 * call closes the item before it. Parallel tool calls are items one after the other, while a provider may announce
 * them together and send their arguments taking turns: a call's arguments are held until it is its turn (the calls
 * before it announced, and the open one's arguments whole JSON), the rest go out at the end.
 */
export class ResponsesStreamRenderer {
  private sequence = 0;
  private started = false;
  private readonly shell: Json;
  private readonly output: Json[] = [];
  private open: OpenItem | null = null;
  /** Each canonical tool call index's call. */
  private readonly tools = new Map<number, ToolCall>();
  /** The calls announced and not yet added to the output, in the order they came. */
  private readonly waiting: ToolCall[] = [];
  private finishReason: unknown = null;
  private usage: CompletionUsage | null = null;

  constructor(reply: ReplyContext) {
    this.shell = responseShell(reply, newId('resp'), Math.floor(Date.now() / 1000));
  }

  private event(type: string, fields: Json): Json {
    return { type, sequence_number: this.sequence++, ...fields };
  }

  private start(out: Json[]): void {
    if (this.started) return;
    this.started = true;
    out.push(this.event('response.created', { response: this.shell }), this.event('response.in_progress', { response: this.shell }));
  }

  push(chunk: ChatCompletionChunk): Json[] {
    const out: Json[] = [];
    this.start(out);
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices.find((item) => isRecord(item) && (item.index ?? 0) === 0);
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '') this.reasoning(reasoning, out);
    // Claude's signed thinking, whole at its block's end: the reasoning item's encrypted_content (see encryptedThinking).
    if (Array.isArray(delta.thinking_blocks)) this.reasoning('', out).blocks.push(...delta.thinking_blocks);
    if (typeof delta.content === 'string' && delta.content !== '') this.text(delta.content, contentLogprobs(choice), out);
    if (typeof delta.refusal === 'string' && delta.refusal !== '') this.refusal(delta.refusal, out);
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isRecord(call)) this.toolCall(call, out);
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) this.finishReason = choice.finish_reason;
    return out;
  }

  /** The model's reasoning as a reasoning item's summary text (response.reasoning_summary_* events). */
  private reasoning(delta: string, out: Json[]): Extract<OpenItem, { kind: 'reasoning' }> {
    if (this.open?.kind !== 'reasoning') {
      this.closeAll(out);
      const item = { kind: 'reasoning' as const, index: this.output.length, id: newId(TRANSLATED_REASONING_PREFIX), text: '', blocks: [] };
      this.output.push(reasoningItem(item.id, null));
      this.open = item;
      out.push(this.event('response.output_item.added', { output_index: item.index, item: reasoningItem(item.id, null) }));
      out.push(this.event('response.reasoning_summary_part.added', { item_id: item.id, output_index: item.index, summary_index: 0, part: summaryText('') }));
    }
    const open = this.open as Extract<OpenItem, { kind: 'reasoning' }>;
    if (delta === '') return open;
    open.text += delta;
    out.push(this.event('response.reasoning_summary_text.delta', { item_id: open.id, output_index: open.index, summary_index: 0, delta }));
    return open;
  }

  private text(delta: string, logprobs: unknown[], out: Json[]): void {
    if (this.open?.kind !== 'text') {
      this.closeAll(out);
      const item = { kind: 'text' as const, index: this.output.length, id: newId('msg'), text: '', logprobs: [] as unknown[] };
      this.output.push(messageItem(item.id, '', 'in_progress'));
      this.open = item;
      out.push(this.event('response.output_item.added', { output_index: item.index, item: { ...messageItem(item.id, '', 'in_progress'), content: [] } }));
      out.push(this.event('response.content_part.added', { item_id: item.id, output_index: item.index, content_index: 0, part: outputText('') }));
    }
    const open = this.open as Extract<OpenItem, { kind: 'text' }>;
    open.text += delta;
    for (const logprob of logprobs) open.logprobs.push(logprob);
    out.push(this.event('response.output_text.delta', { item_id: open.id, output_index: open.index, content_index: 0, delta, logprobs }));
  }

  /** A refusal as a message item of its own holding a refusal part (response.refusal.* events). */
  private refusal(delta: string, out: Json[]): void {
    if (this.open?.kind !== 'refusal') {
      this.closeAll(out);
      const item = { kind: 'refusal' as const, index: this.output.length, id: newId('msg'), text: '' };
      this.output.push(messageItem(item.id, '', 'in_progress', [refusalPart('')]));
      this.open = item;
      out.push(this.event('response.output_item.added', { output_index: item.index, item: messageItem(item.id, '', 'in_progress', []) }));
      out.push(this.event('response.content_part.added', { item_id: item.id, output_index: item.index, content_index: 0, part: refusalPart('') }));
    }
    const open = this.open as Extract<OpenItem, { kind: 'refusal' }>;
    open.text += delta;
    out.push(this.event('response.refusal.delta', { item_id: open.id, output_index: open.index, content_index: 0, delta }));
  }

  private toolCall(call: Json, out: Json[]): void {
    const toolIndex = typeof call.index === 'number' ? call.index : 0;
    const fn = isRecord(call.function) ? call.function : {};
    const delta = typeof fn.arguments === 'string' ? fn.arguments : '';
    let tool = this.tools.get(toolIndex);
    if (!tool) {
      tool = { kind: 'tool', index: -1, id: newId('fc'), callId: typeof call.id === 'string' && call.id !== '' ? call.id : newId('call'), name: valueText(fn.name ?? ''), args: '', scan: new ArgumentsScan() };
      this.tools.set(toolIndex, tool);
      this.waiting.push(tool);
    }
    tool.signature ??= thoughtSignatureOf(call);
    if (this.open === tool) {
      if (delta === '') return;
      tool.args += delta;
      tool.scan.add(delta);
      out.push(this.event('response.function_call_arguments.delta', { item_id: tool.id, output_index: tool.index, delta }));
      return;
    }
    tool.args += delta;
    tool.scan.add(delta);
    // Its turn comes once the calls announced before it went out and the open one can take no more arguments.
    const open = this.open;
    if (this.waiting[0] !== tool || (open?.kind === 'tool' && !open.scan.whole(open.args))) return;
    this.close(out);
    this.add(tool, out);
  }

  /**
   * A waiting call added to the output as the open item, the arguments it was given so far in one delta. A call Gemini
   * signed is led by a reasoning item carrying the signature (added and done at once, as responseOf places it).
   */
  private add(tool: ToolCall, out: Json[]): void {
    this.waiting.shift();
    if (tool.signature !== undefined) {
      const item = signatureItem(tool.callId, tool.signature);
      const index = this.output.length;
      this.output.push(item);
      out.push(this.event('response.output_item.added', { output_index: index, item: reasoningItem(item.id as string, null) }));
      out.push(this.event('response.output_item.done', { output_index: index, item }));
    }
    tool.index = this.output.length;
    this.output.push(functionCallItem(tool.id, tool.callId, tool.name, '', 'in_progress'));
    this.open = tool;
    out.push(this.event('response.output_item.added', { output_index: tool.index, item: functionCallItem(tool.id, tool.callId, tool.name, '', 'in_progress') }));
    if (tool.args !== '') out.push(this.event('response.function_call_arguments.delta', { item_id: tool.id, output_index: tool.index, delta: tool.args }));
  }

  /**
   * Closes the open item, then adds and closes every call still waiting, in order. The last of them closes with
   * `lastStatus` (at the stream's end: `incomplete` for the item a length or filter stop cut, see end()).
   */
  private closeAll(out: Json[], lastStatus: ItemStatus = 'completed'): void {
    this.close(out, this.waiting.length === 0 ? lastStatus : 'completed');
    for (let tool = this.waiting[0]; tool; tool = this.waiting[0]) {
      this.add(tool, out);
      this.close(out, this.waiting.length === 0 ? lastStatus : 'completed');
    }
  }

  /** Closes the open item: its done events, and its finished form in the output (a message or call with `status`). */
  private close(out: Json[], status: ItemStatus = 'completed'): void {
    const open = this.open;
    if (!open) return;
    this.open = null;
    if (open.kind === 'reasoning') {
      const item = reasoningItem(open.id, open.text, encryptedThinking(open.blocks));
      this.output[open.index] = item;
      out.push(this.event('response.reasoning_summary_text.done', { item_id: open.id, output_index: open.index, summary_index: 0, text: open.text }));
      out.push(this.event('response.reasoning_summary_part.done', { item_id: open.id, output_index: open.index, summary_index: 0, part: summaryText(open.text) }));
      out.push(this.event('response.output_item.done', { output_index: open.index, item }));
      return;
    }
    if (open.kind === 'refusal') {
      const item = messageItem(open.id, '', status, [refusalPart(open.text)]);
      this.output[open.index] = item;
      out.push(this.event('response.refusal.done', { item_id: open.id, output_index: open.index, content_index: 0, refusal: open.text }));
      out.push(this.event('response.content_part.done', { item_id: open.id, output_index: open.index, content_index: 0, part: refusalPart(open.text) }));
      out.push(this.event('response.output_item.done', { output_index: open.index, item }));
      return;
    }
    if (open.kind === 'text') {
      const part = outputText(open.text, open.logprobs);
      const item = messageItem(open.id, open.text, status, [part]);
      this.output[open.index] = item;
      out.push(this.event('response.output_text.done', { item_id: open.id, output_index: open.index, content_index: 0, text: open.text, logprobs: open.logprobs }));
      out.push(this.event('response.content_part.done', { item_id: open.id, output_index: open.index, content_index: 0, part }));
      out.push(this.event('response.output_item.done', { output_index: open.index, item }));
      return;
    }
    const item = functionCallItem(open.id, open.callId, open.name, open.args, status);
    this.output[open.index] = item;
    out.push(this.event('response.function_call_arguments.done', { item_id: open.id, output_index: open.index, name: open.name, arguments: open.args }));
    out.push(this.event('response.output_item.done', { output_index: open.index, item }));
  }

  /**
   * The stream's end: the open item closed (and calls still waiting), then response.completed (or .incomplete). A
   * length or filter stop cut the last item, which is done as `incomplete`, as OpenAI's own stream has it.
   */
  end(usage: CompletionUsage | null): Json[] {
    const out: Json[] = [];
    this.start(out);
    this.closeAll(out, finishedStatus(this.finishReason).status);
    const response = finishedResponse(this.shell, this.output, this.finishReason, this.usage ?? usage);
    out.push(this.event(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }));
    return out;
  }

  /**
   * A failure after the stream began: the documented `error` event, then response.failed with the Response so far,
   * so neither a reader of events nor the SDK's final Response mistakes it for a whole answer.
   */
  fail(error: GatewayError): Json[] {
    const out: Json[] = [];
    this.start(out);
    const failed = failureEvents(error, this.shell, this.sequence, this.output);
    this.sequence += failed.length;
    return [...out, ...failed];
  }
}

/**
 * The end of a stream that failed after it began: the documented `error` event, then response.failed with the
 * Response so far (`shell`, its output), numbered from `sequence` on.
 */
export function failureEvents(error: GatewayError, shell: Json, sequence: number, output: unknown): Json[] {
  const code = error.code ?? error.type;
  return [
    { type: 'error', sequence_number: sequence, code, message: error.message, param: error.param ?? null },
    { type: 'response.failed', sequence_number: sequence + 1, response: { ...shell, status: 'failed', error: { code, message: error.message }, output } },
  ];
}
