import { EventEmitter } from 'eventemitter3';
import type { EventName, GatewayEvents } from '../core/events.js';

type Listener<K extends EventName> = (payload: GatewayEvents[K]) => void;

/**
 * Typed, synchronous, in-process bus. Emitting must stay cheap: with no subscriber it is a map lookup.
 * A throwing subscriber must never break a request, so listeners are isolated.
 */
export class EventBus {
  private readonly emitter = new EventEmitter();

  emit<K extends EventName>(name: K, payload: GatewayEvents[K]): void {
    if (this.emitter.listenerCount(name) === 0) return;
    this.emitter.emit(name, payload);
  }

  on<K extends EventName>(name: K, listener: Listener<K>): () => void {
    const safe = (payload: GatewayEvents[K]): void => {
      try {
        listener(payload);
      } catch (err) {
        // Subscribers are best-effort observers; report and carry on.
        process.emitWarning(`event subscriber for ${name} threw: ${String(err)}`);
      }
    };
    this.emitter.on(name, safe);
    return () => {
      this.emitter.off(name, safe);
    };
  }

  hasListeners(name: EventName): boolean {
    return this.emitter.listenerCount(name) > 0;
  }

  removeAll(): void {
    this.emitter.removeAllListeners();
  }
}
