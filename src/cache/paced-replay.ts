import { Observable } from 'rxjs';
import type { ResponseEvent } from '../core/canonical.js';
import type { RequestContext } from '../core/context.js';

/** Replayed chunks between two turns of the event loop. */
const BATCH = 512;

/**
 * A hit's replayed chunks, a batch at a time with the event loop free between batches and, like a live stream, no
 * faster than the client reads: a long answer (hundreds of thousands of chunks) written in one go held every other
 * request for seconds and piled its whole SSE text up in the socket's buffer. The chunks are taken from `events`
 * as they go out, so one made on demand (a generator) is never all in memory at once; a short answer (one batch)
 * goes out at once, as `from` would send it.
 */
export function pacedReplay(ctx: RequestContext, events: Iterable<ResponseEvent>): Observable<ResponseEvent> {
  return new Observable<ResponseEvent>((subscriber) => {
    const source = events[Symbol.iterator]();
    let timer: NodeJS.Immediate | null = null;
    const step = (): void => {
      timer = null;
      for (let sent = 0; sent < BATCH; sent++) {
        if (subscriber.closed) return;
        let next: IteratorResult<ResponseEvent>;
        try {
          next = source.next();
        } catch (err) {
          // Made on demand, a chunk that cannot be made fails this answer only (a later batch runs outside any caller).
          return subscriber.error(err);
        }
        if (next.done === true) return subscriber.complete();
        subscriber.next(next.value);
      }
      if (subscriber.closed) return;
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
      // A generator's own cleanup (none today) runs when the client leaves mid-replay.
      source.return?.();
    };
  });
}
