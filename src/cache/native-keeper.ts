import type { NativeStreamEvent, ResponseEvent } from '../core/canonical.js';
import type { CachedNative } from './cache-store.js';

/**
 * Keeps the upstream's own answer as it passes, for the cache entry and an MCP agent run's next turn: in native
 * pass-through, Anthropic's or Gemini's whole message or their stream events; for a client reading the upstream's
 * format as it came (`RequestContext.verbatimFormat`, an OpenAI client of an OpenAI-format provider), the whole
 * answer's text or each chunk's own event. As the dialects decide, the first chunk tells: with events on it, the
 * stream is the upstream's own (later chunks of a read carry none); with its own event's text, every chunk must
 * carry its own (one that does not was made or rewritten inside, and the stream is not kept); with neither, a stage
 * inside made the answer (an MCP agent run), and nothing is kept.
 */
export class NativeKeeper {
  private body: Record<string, unknown> | null = null;
  private text: string | null = null;
  private events: NativeStreamEvent[] | null = null;
  /** Each chunk carries its own event (`NativeAnswer.text`), rather than the first carrying the read's events. */
  private perChunk = false;
  private first = true;
  /** The characters of the stream events' data kept so far (see StreamAssembler.size). */
  size = 0;

  constructor(private readonly format: string | null) {}

  add(event: ResponseEvent): void {
    if (this.format === null || event.kind === 'embeddings') return;
    const native = event.native?.format === this.format ? event.native : null;
    if (event.kind === 'completion') {
      if (native?.body || native?.text !== undefined) {
        this.body = native.body ?? null;
        this.text = native.text ?? null;
      }
      return;
    }
    if (this.first) {
      this.first = false;
      this.perChunk = native?.text !== undefined && !native.events;
      if (native?.events || this.perChunk) this.events = [];
    }
    if (this.events === null) return;
    if (this.perChunk) {
      if (native?.text === undefined) this.events = null;
      else this.keep({ event: '', data: native.text });
    } else if (native?.events) {
      for (const kept of native.events) this.keep(kept);
    }
  }

  /**
   * Whether what is kept is a stream's own chunk events (a verbatim stream): a copy of what the canonical answer holds
   * too, so a caller short of room may forget them and keep that answer.
   */
  get keepsChunkEvents(): boolean {
    return this.perChunk && this.events !== null;
  }

  /** Forgets a stream's events and keeps none after them. */
  forget(): void {
    this.events = null;
    this.size = 0;
  }

  private keep(kept: NativeStreamEvent): void {
    (this.events as NativeStreamEvent[]).push(kept);
    this.size += kept.data.length;
  }

  kept(): CachedNative | null {
    if (this.format === null) return null;
    if (this.body !== null || this.text !== null) {
      const kept: CachedNative = { format: this.format };
      if (this.body !== null) kept.body = this.body;
      if (this.text !== null) kept.text = this.text;
      return kept;
    }
    return this.events && this.events.length > 0 ? { format: this.format, events: this.events } : null;
  }
}
