import type { NativeStreamEvent, ResponseEvent } from '../core/canonical.js';
import type { CachedNative } from './cache-store.js';

/**
 * Keeps the upstream's own answer of a native pass-through (Anthropic's or Gemini's whole message, or their stream
 * events) as it passes, for the cache entry and an MCP agent run's next turn. As the dialects decide, the first
 * chunk tells: with events on it, the stream is the upstream's own (later chunks of a read carry none); without, a
 * stage inside made the answer (an MCP agent run), and nothing is kept.
 */
export class NativeKeeper {
  private body: Record<string, unknown> | null = null;
  private text: string | null = null;
  private events: NativeStreamEvent[] | null = null;
  private first = true;
  /** The characters of the stream events' data kept so far (see StreamAssembler.size). */
  size = 0;

  constructor(private readonly format: string | null) {}

  add(event: ResponseEvent): void {
    if (this.format === null || event.kind === 'embeddings') return;
    const native = event.native?.format === this.format ? event.native : null;
    if (event.kind === 'completion') {
      if (native?.body) {
        this.body = native.body;
        this.text = native.text ?? null;
      }
      return;
    }
    if (this.first) {
      this.first = false;
      if (native?.events) this.events = [];
    }
    if (this.events && native?.events) {
      for (const kept of native.events) {
        this.events.push(kept);
        this.size += kept.data.length;
      }
    }
  }

  kept(): CachedNative | null {
    if (this.format === null) return null;
    if (this.body !== null) return this.text === null ? { format: this.format, body: this.body } : { format: this.format, body: this.body, text: this.text };
    return this.events && this.events.length > 0 ? { format: this.format, events: this.events } : null;
  }
}
