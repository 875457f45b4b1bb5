import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletionChunk, CompletionUsage } from '../../core/canonical.js';
import { anthropicErrorBody } from './error-shape.js';
import { messageId, toolUseId } from './ids.js';
import type { ReplyContext } from './response.js';
import { type AnthropicStreamEvent, type Json } from '../../wire/anthropic/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { matchedStopSequence, stopReasonOf } from '../../wire/anthropic/stop-reasons.js';
import { anthropicUsage } from '../../wire/anthropic/usage.js';
import { ArgumentsScan } from '../arguments-scan.js';

type BlockKind = 'text' | 'thinking' | 'tool_use';

function event(name: string, data: Json = {}): AnthropicStreamEvent {
  return { event: name, data: { type: name, ...data } };
}

/** One event in SSE framing, as Anthropic sends it: the name on `event:` and again as the data's `type`. */
export function sseFrame(item: AnthropicStreamEvent): string {
  return `event: ${item.event}\ndata: ${JSON.stringify(item.data)}\n\n`;
}

/** A failure after the stream began: Anthropic's `error` event (the stream then ends without message_stop). */
export function errorEvent(error: GatewayError): AnthropicStreamEvent {
  return { event: 'error', data: anthropicErrorBody(error).body };
}

/**
 * Renders canonical chunks as Anthropic's stream, chunk by chunk: message_start and ping before the first
 * block; each block opened by content_block_start, fed by deltas and closed by content_block_stop before the
 * next one opens (Anthropic's blocks never interleave); message_delta (stop reason, usage) and message_stop at
 * the end. Tool arguments go out as input_json_delta fragments exactly as they arrive, but for a provider that
 * announces parallel calls together and sends their arguments taking turns (OpenAI's chunks key fragments by index,
 * so that order is legal): a call's block opens once its turn comes (the calls before it had theirs, and the open
 * call's arguments are whole JSON), its arguments held until then; the rest go out at the end.
 */
export class AnthropicStreamRenderer {
  private begun = false;
  private blocks = 0;
  private open: { kind: BlockKind; tool: number } | null = null;
  /** The open tool_use block's arguments so far, read for whether they are whole (see ArgumentsScan). */
  private openArgs: { text: string; scan: ArgumentsScan } | null = null;
  /** Named calls whose block has not opened yet (another call's block was open, its arguments not whole), in order. */
  private readonly waiting: Array<{ index: number; id: unknown; name: string; args: string }> = [];
  /** Canonical tool_calls indexes that already had their block. */
  private readonly toolsSeen = new Set<number>();
  /**
   * Tool calls begun without a name, by canonical index: some OpenAI-compatible servers send the name in a later
   * delta than the call's id (OpenAI's SDK takes it from whichever delta has it). A tool_use block names its tool
   * once, in content_block_start, so the block opens when the name comes, with the arguments held until then.
   */
  private readonly unnamed = new Map<number, { id: unknown; args: string }>();
  private finishReason: unknown = null;
  private stopSequence: string | null = null;
  private usage: CompletionUsage | null = null;

  constructor(private readonly reply: ReplyContext) {}

  /** Whether anything was rendered yet (after that, failures can only be reported in-stream). */
  get started(): boolean {
    return this.begun;
  }

  push(chunk: ChatCompletionChunk): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [];
    if (!this.begun) out.push(...this.begin(chunk));
    if (chunk.usage) this.usage = chunk.usage;
    // The usage-only chunk (no choices) that include_usage adds carries no content.
    const choice = chunk.choices[0];
    if (!isRecord(choice)) return out;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = delta.reasoning_content ?? delta.reasoning;
    if (typeof reasoning === 'string' && reasoning !== '') {
      out.push(...this.ensure('thinking'), this.delta({ type: 'thinking_delta', thinking: reasoning }));
    }
    // A refusal (OpenAI's structured outputs) streams in its own field; it is the answer's text, as anthropicMessage
    // makes it of a whole answer's `message.refusal`.
    for (const text of [delta.content, delta.refusal]) {
      if (typeof text === 'string' && text !== '') out.push(...this.ensure('text'), this.delta({ type: 'text_delta', text }));
    }
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) out.push(...this.toolCall(call));
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.finishReason = choice.finish_reason;
      this.stopSequence = matchedStopSequence(choice, this.reply.stopSequences);
      out.push(...this.openWaiting(), ...this.openUnnamed(), ...this.close());
    }
    return out;
  }

  /** The closing events once the canonical stream completed. */
  end(): AnthropicStreamEvent[] {
    const out = [...this.openWaiting(), ...this.openUnnamed(), ...this.close()];
    const stopReason = stopReasonOf(this.finishReason, this.stopSequence);
    // Anthropic's message_delta usage is cumulative; input counts ride along because message_start came too early to know them.
    const usage: Json = this.usage ? { ...anthropicUsage(this.usage) } : { output_tokens: 0 };
    out.push(
      event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: stopReason === 'stop_sequence' ? this.stopSequence : null }, usage }),
      event('message_stop'),
    );
    return out;
  }

  private begin(chunk: ChatCompletionChunk): AnthropicStreamEvent[] {
    this.begun = true;
    const usage = chunk.usage ? anthropicUsage(chunk.usage) : anthropicUsage(null);
    const message = {
      id: messageId(chunk.id),
      type: 'message',
      role: 'assistant',
      model: this.reply.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 0 },
    };
    return [event('message_start', { message }), event('ping')];
  }

  private toolCall(call: unknown): AnthropicStreamEvent[] {
    if (!isRecord(call)) return [];
    const index = typeof call.index === 'number' ? call.index : 0;
    const fn = isRecord(call.function) ? call.function : {};
    const args = typeof fn.arguments === 'string' ? fn.arguments : '';
    if (this.open?.kind === 'tool_use' && this.open.tool === index) {
      if (args === '') return [];
      if (this.openArgs) {
        this.openArgs.text += args;
        this.openArgs.scan.add(args);
      }
      return [this.delta({ type: 'input_json_delta', partial_json: args })];
    }
    const waiting = this.waiting.find((entry) => entry.index === index);
    if (waiting) {
      waiting.args += args;
      return this.turnOf(waiting);
    }
    // A fragment for a call whose block is already closed (its arguments were whole) cannot be placed.
    if (this.toolsSeen.has(index)) return [];
    const held = this.unnamed.get(index);
    const id = typeof held?.id === 'string' && held.id !== '' ? held.id : call.id;
    if (typeof fn.name !== 'string' || fn.name === '') {
      this.unnamed.set(index, { id, args: (held?.args ?? '') + args });
      return [];
    }
    this.unnamed.delete(index);
    const announced = { index, id, name: fn.name, args: (held?.args ?? '') + args };
    this.waiting.push(announced);
    return this.turnOf(announced);
  }

  /** Opens a waiting call's block if its turn has come: the calls announced before it had theirs, and the open call can take no more arguments. */
  private turnOf(call: { index: number; id: unknown; name: string; args: string }): AnthropicStreamEvent[] {
    if (this.waiting[0] !== call) return [];
    if (this.open?.kind === 'tool_use' && this.openArgs && !this.openArgs.scan.whole(this.openArgs.text)) return [];
    this.waiting.shift();
    return this.openTool(call.index, call.id, call.name, call.args);
  }

  /** Calls still waiting at the end, in order: each gets its block with its arguments whole. */
  private openWaiting(): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [];
    for (let call = this.waiting.shift(); call; call = this.waiting.shift()) out.push(...this.openTool(call.index, call.id, call.name, call.args));
    return out;
  }

  private openTool(index: number, id: unknown, name: string, args: string): AnthropicStreamEvent[] {
    this.toolsSeen.add(index);
    const out = this.openBlock('tool_use', index, { type: 'tool_use', id: typeof id === 'string' && id !== '' ? id : toolUseId(), name, input: {} });
    this.openArgs = { text: args, scan: new ArgumentsScan() };
    this.openArgs.scan.add(args);
    if (args !== '') out.push(this.delta({ type: 'input_json_delta', partial_json: args }));
    return out;
  }

  /** Calls whose name never came, at the end: their arguments still reach the client, as a whole answer's would. */
  private openUnnamed(): AnthropicStreamEvent[] {
    const out: AnthropicStreamEvent[] = [];
    for (const [index, call] of [...this.unnamed].sort(([a], [b]) => a - b)) out.push(...this.openTool(index, call.id, '', call.args));
    this.unnamed.clear();
    return out;
  }

  private ensure(kind: 'text' | 'thinking'): AnthropicStreamEvent[] {
    if (this.open?.kind === kind) return [];
    const block = kind === 'text' ? { type: 'text', text: '' } : { type: 'thinking', thinking: '', signature: '' };
    return this.openBlock(kind, -1, block);
  }

  private openBlock(kind: BlockKind, tool: number, block: Json): AnthropicStreamEvent[] {
    const out = this.close();
    this.open = { kind, tool };
    out.push(event('content_block_start', { index: this.blocks, content_block: block }));
    return out;
  }

  private delta(delta: Json): AnthropicStreamEvent {
    return event('content_block_delta', { index: this.blocks, delta });
  }

  private close(): AnthropicStreamEvent[] {
    if (!this.open) return [];
    this.open = null;
    this.openArgs = null;
    const stop = event('content_block_stop', { index: this.blocks });
    this.blocks++;
    return [stop];
  }
}
