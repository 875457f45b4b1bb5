import type { NativeStreamEvent } from '../core/canonical.js';
import { eventData } from '../core/event-data.js';
import { isRecord } from '../core/is-record.js';
import type { TextStreamGuard } from './text-stream-guard.js';

/** The delta that carries a content block's text, by block type, and the field it is in. */
interface BlockText {
  delta: string;
  field: string;
}

const BLOCK_TEXTS: Record<string, BlockText> = {
  text: { delta: 'text_delta', field: 'text' },
  thinking: { delta: 'thinking_delta', field: 'thinking' },
  tool_use: { delta: 'input_json_delta', field: 'partial_json' },
  server_tool_use: { delta: 'input_json_delta', field: 'partial_json' },
  mcp_tool_use: { delta: 'input_json_delta', field: 'partial_json' },
};

function event(type: string, data: Record<string, unknown>): NativeStreamEvent {
  return { event: type, data: JSON.stringify({ type, ...data }) };
}

/**
 * Output rules on an Anthropic stream passed through as the upstream sent it: each content block's text (answer,
 * thinking, tool input) goes through a stream guard of its own, and its deltas carry what the guard releases: held
 * back while a match may still span the next delta, redacted where one was found, the rest just before the block's
 * stop. Every other event (message_start, signatures, citations, pings, message_delta with its usage) goes out as it
 * came, so a stream nothing was found in reaches the client byte for byte, thinking signatures included. A blocking
 * finding ends the blocks there: later content events are dropped, and the upstream's own message_delta closes the
 * message with `stop_reason: "refusal"` and the usage it reports (what the model generated was paid for, and the
 * client's SDK counts it; an upstream cut off before it gets one with no usage). (The canonical chunks are guarded
 * alongside for the stages and logs that read them; this guard reports nothing itself.)
 */
export class AnthropicEventGuard {
  readonly format = 'anthropic';
  private readonly blocks = new Map<number, { text: BlockText; guard: TextStreamGuard }>();
  /** A rule blocked the answer: no more content goes out, and the message ends as a refusal. */
  private refused = false;
  /** The refusal's message_delta went out. */
  private closed = false;
  /** The message is over (its message_stop went out): nothing more goes out. */
  private ended = false;

  constructor(private readonly newGuard: () => TextStreamGuard) {}

  /** The events the client may have of `events`, in order. */
  pass(events: readonly NativeStreamEvent[]): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const item of events) {
      if (this.ended) break;
      if (this.refused) {
        this.afterRefusal(item, out);
        continue;
      }
      if (item.event !== 'content_block_start' && item.event !== 'content_block_delta' && item.event !== 'content_block_stop') {
        out.push(item);
        continue;
      }
      const data = eventData(item);
      const index = data && typeof data.index === 'number' ? data.index : -1;
      if (!data || index < 0) {
        out.push(item);
        continue;
      }
      if (item.event === 'content_block_start') {
        const type = isRecord(data.content_block) ? data.content_block.type : undefined;
        const text = typeof type === 'string' && Object.hasOwn(BLOCK_TEXTS, type) ? BLOCK_TEXTS[type] : undefined;
        if (text) this.blocks.set(index, { text, guard: this.newGuard() });
        out.push(item);
        continue;
      }
      const block = this.blocks.get(index);
      if (item.event === 'content_block_stop') {
        if (block) {
          this.blocks.delete(index);
          if (!this.release(index, block, block.guard.end(), out)) continue;
        }
        out.push(item);
        continue;
      }
      const delta = isRecord(data.delta) ? data.delta : null;
      const value = delta && block && delta.type === block.text.delta ? delta[block.text.field] : undefined;
      if (block && typeof value !== 'string') {
        // Another delta of the block (a thinking's signature, a citation) follows the text before it: what is held
        // goes first, and the text after it starts a guard of its own.
        if (!this.release(index, block, block.guard.end(), out)) continue;
        block.guard = this.newGuard();
      }
      if (!block || typeof value !== 'string') {
        out.push(item);
        continue;
      }
      if (!this.release(index, block, block.guard.push(value), out)) continue;
    }
    return out;
  }

  /** What the blocks still hold, for a stream that ended without their stops (cut off). */
  end(): NativeStreamEvent[] {
    const out: NativeStreamEvent[] = [];
    for (const [index, block] of this.blocks) {
      if (this.ended || this.refused || !this.release(index, block, block.guard.end(), out)) break;
    }
    this.blocks.clear();
    // Refused, and the upstream stopped short of its message_stop: the message still ends, as a refusal.
    if (this.refused && !this.ended) {
      this.ended = true;
      this.closeRefusal(out);
      out.push(event('message_stop', {}));
    }
    return out;
  }

  /** The refusal's message_delta, with no usage (the upstream reported none), unless one went out. */
  private closeRefusal(out: NativeStreamEvent[]): void {
    if (this.closed) return;
    this.closed = true;
    out.push(event('message_delta', { delta: { stop_reason: 'refusal', stop_sequence: null }, usage: { output_tokens: 0 } }));
  }

  /** An event after a block: content is dropped; the message's end goes out, its stop reason made `refusal`. */
  private afterRefusal(item: NativeStreamEvent, out: NativeStreamEvent[]): void {
    if (item.event === 'message_delta' && !this.closed) {
      const data = eventData(item);
      const delta = data && isRecord(data.delta) ? data.delta : {};
      this.closed = true;
      out.push(event('message_delta', { ...data, delta: { ...delta, stop_reason: 'refusal', stop_sequence: null } }));
      return;
    }
    if (item.event === 'message_stop' || item.event === 'error') {
      this.ended = true;
      if (item.event === 'message_stop') this.closeRefusal(out);
      out.push(item);
      return;
    }
    if (item.event === 'ping') out.push(item);
  }

  /** Appends a delta with what the guard released (none when nothing); false when a block stopped the message. */
  private release(index: number, block: { text: BlockText }, step: { release: string; blocked: unknown }, out: NativeStreamEvent[]): boolean {
    if (step.release !== '') out.push(event('content_block_delta', { index, delta: { type: block.text.delta, [block.text.field]: step.release } }));
    if (!step.blocked) return true;
    this.refused = true;
    this.blocks.clear();
    out.push(event('content_block_stop', { index }));
    return false;
  }
}
