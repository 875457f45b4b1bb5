import type { NativeStreamEvent } from '../core/canonical.js';
import { isRecord } from '../core/is-record.js';
import { addCounts } from './run-usage.js';

type Json = Record<string, unknown>;

function parse(data: string): Json | null {
  try {
    const value: unknown = JSON.parse(data);
    return isRecord(value) ? value : null;
  } catch {
    return null;
  }
}

/** A Gemini piece's parts: what it says (text, not thoughts) and whether it calls a function. */
function geminiParts(data: Json | null): { text: boolean; call: boolean } {
  const candidate = data && Array.isArray(data.candidates) ? data.candidates[0] : undefined;
  const content = isRecord(candidate) ? candidate.content : undefined;
  const parts = isRecord(content) && Array.isArray(content.parts) ? content.parts : [];
  return {
    text: parts.some((part) => isRecord(part) && typeof part.text === 'string' && part.text !== '' && part.thought !== true),
    call: parts.some((part) => isRecord(part) && isRecord(part.functionCall)),
  };
}

/**
 * The client's stream of an MCP agent run whose turns come from an upstream of the client's own format (Anthropic's
 * or Gemini's events, native pass-through): the turn that answers reaches the client as the upstream streamed it
 * (signed thinking, server tool blocks and all), with the run's usage (every turn's counts added) in
 * message_start and message_delta, or in each Gemini piece's usageMetadata.
 *
 * A turn is held until it is known to be the client's: it starts saying something before any tool call (then it
 * streams live, the final answer does not wait), or it ends without an MCP tool call. A turn known to be the last
 * (`live`) streams from its start. When a turn that streamed text then calls MCP tools, its tool call and end are
 * dropped and the next turn's events continue the same message: its message_start is left out and its content
 * blocks numbered after the ones the client has.
 */
export class NativeRunStream {
  /** Anthropic content blocks the client has from earlier turns: a later turn's blocks are numbered after them. */
  private blocks = 0;
  /** The client has the message's start. */
  private started = false;
  private earlier: Json | null = null;
  private live = false;
  private passing = false;
  private calling = false;
  private held: NativeStreamEvent[] = [];
  /** This turn's blocks the client got (its own numbering). */
  private turnBlocks = 0;
  /** This turn's message_start usage (message_delta's may hold the output counts alone). */
  private startUsage: Json = {};

  constructor(readonly format: 'anthropic' | 'gemini') {}

  /** Whether the client got any of the upstream's events (its stream is then the upstream's, to the end). */
  get begun(): boolean {
    return this.started;
  }

  /** A new turn; `earlier` is the turns before it's usage in the format's shape, `live` whether it is the last. */
  startTurn(earlier: Json | null, live: boolean): void {
    this.earlier = earlier;
    this.live = live;
    this.passing = live;
    this.calling = false;
    this.held = [];
    this.turnBlocks = 0;
    this.startUsage = {};
  }

  /** The turn's next events: those to send now, rewritten (the others are held). */
  push(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const item of events) {
      const { text, call } = this.classify(item);
      if (call && !this.calling) {
        this.calling = true;
        if (!this.live) this.passing = false;
      } else if (text && !this.calling && !this.passing) {
        this.passing = true;
        out.push(...this.release(this.held.splice(0)));
      }
      if (this.passing) out.push(...this.release([item]));
      else this.held.push(item);
    }
    return out;
  }

  /** The turn ended: its held events, when it is the client's (`final`), else none (they are dropped). */
  finish(final: boolean): NativeStreamEvent[] {
    const held = this.held.splice(0);
    if (final) return this.release(held);
    this.blocks += this.turnBlocks;
    return [];
  }

  private classify(item: NativeStreamEvent): { text: boolean; call: boolean } {
    if (this.format === 'gemini') return geminiParts(parse(item.data));
    if (item.event === 'content_block_start') {
      const block = parse(item.data)?.content_block;
      return { text: false, call: isRecord(block) && block.type === 'tool_use' };
    }
    if (item.event === 'content_block_delta' && item.data.includes('"text_delta"')) {
      const delta = parse(item.data)?.delta;
      return { text: isRecord(delta) && delta.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '', call: false };
    }
    return { text: false, call: false };
  }

  private release(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const item of events) {
      const rewritten = this.format === 'anthropic' ? this.anthropicEvent(item) : this.geminiEvent(item);
      if (rewritten) out.push(rewritten);
    }
    return out;
  }

  private geminiEvent(item: NativeStreamEvent): NativeStreamEvent {
    this.started = true;
    if (!this.earlier || !item.data.includes('usageMetadata')) return item;
    const data = parse(item.data);
    if (!data || !isRecord(data.usageMetadata)) return item;
    return { ...item, data: JSON.stringify({ ...data, usageMetadata: addCounts(this.earlier, data.usageMetadata) }) };
  }

  private anthropicEvent(item: NativeStreamEvent): NativeStreamEvent | null {
    switch (item.event) {
      case 'message_start': {
        const data = parse(item.data);
        const message = isRecord(data?.message) ? data.message : null;
        this.startUsage = message && isRecord(message.usage) ? message.usage : {};
        // The client has a message begun by an earlier turn: this turn's blocks go on in it.
        if (this.started) return null;
        this.started = true;
        if (!this.earlier || !data || !message) return item;
        return { ...item, data: JSON.stringify({ ...data, message: { ...message, usage: addCounts(this.earlier, this.startUsage) } }) };
      }
      case 'content_block_start':
      case 'content_block_delta':
      case 'content_block_stop': {
        // Read without parsing when the numbers stay (a delta's data is most of a stream).
        const index = /"index"\s*:\s*(\d+)/.exec(item.data);
        if (index) this.turnBlocks = Math.max(this.turnBlocks, Number(index[1]) + 1);
        if (this.blocks === 0) return item;
        const data = parse(item.data);
        return data && typeof data.index === 'number' ? { ...item, data: JSON.stringify({ ...data, index: data.index + this.blocks }) } : item;
      }
      case 'message_delta': {
        if (!this.earlier) return item;
        const data = parse(item.data);
        if (!data) return item;
        // Every count, the input side too: a message begun by an earlier turn started with that turn's input only.
        const own = isRecord(data.usage) ? data.usage : {};
        return { ...item, data: JSON.stringify({ ...data, usage: addCounts(this.earlier, { ...this.startUsage, ...own }) }) };
      }
      default:
        return item;
    }
  }
}
