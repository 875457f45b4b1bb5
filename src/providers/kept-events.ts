import type { NativeStreamEvent } from '../core/canonical.js';

/**
 * An upstream's own stream events as they came (name and data text), kept by a decoder for native pass-through and
 * handed out by `take` (the decoder's `takeNative`): those decoded since it was last called, in order.
 */
export class KeptEvents {
  private events: NativeStreamEvent[] = [];

  push(event: string, data: string): void {
    this.events.push({ event, data });
  }

  take(): NativeStreamEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }
}
