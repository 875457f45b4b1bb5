import { from, Observable } from 'rxjs';
import type { ResponseEvent } from '../core/canonical.js';
import type { RequestContext } from '../core/context.js';

/** Replayed chunks between two turns of the event loop. */
const BATCH = 512;

/**
 * A hit's replayed chunks, a batch at a time with the event loop free between batches and, like a live stream, no
 * faster than the client reads: a long answer (hundreds of thousands of chunks) written in one go held every other
 * request for seconds and piled its whole SSE text up in the socket's buffer.
 */
export function pacedReplay(ctx: RequestContext, events: ResponseEvent[]): Observable<ResponseEvent> {
  if (events.length <= BATCH) return from(events);
  return new Observable<ResponseEvent>((subscriber) => {
    let at = 0;
    let timer: NodeJS.Immediate | null = null;
    const step = (): void => {
      timer = null;
      const end = Math.min(at + BATCH, events.length);
      while (at < end && !subscriber.closed) subscriber.next(events[at++] as ResponseEvent);
      if (subscriber.closed) return;
      if (at >= events.length) return subscriber.complete();
      const ready = ctx.clientReady();
      if (ready === null) timer = setImmediate(step);
      else
        void ready.then(() => {
          if (!subscriber.closed) timer = setImmediate(step);
        });
    };
    step();
    return () => {
      if (timer !== null) clearImmediate(timer);
    };
  });
}
