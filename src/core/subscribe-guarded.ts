import type { Observable, Subscription } from 'rxjs';

/** An observer with all three callbacks. */
export interface FullObserver<T> {
  next(value: T): void;
  error(err: unknown): void;
  complete(): void;
}

/**
 * `source.subscribe(observer)`, where an exception thrown by the observer's `next` or `complete` fails this
 * subscription (the source is unsubscribed and the observer's own `error` gets the exception) instead of escaping
 * into rxjs, which reports a throwing observer outside any request, as an uncaught exception: `tollgate serve`
 * would exit, and every request in flight with it. A stage that reads the answer's events in its own subscriber
 * (spend, the cache, MCP, the runner) so fails only the request whose event it could not read.
 */
export function subscribeGuarded<T>(source: Observable<T>, observer: FullObserver<T>): Subscription {
  let done = false;
  let subscription: Subscription | null = null;
  let failedEarly = false;
  const fail = (err: unknown): void => {
    done = true;
    // A fault during the synchronous part of subscribe comes before `subscription` is known.
    if (subscription) subscription.unsubscribe();
    else failedEarly = true;
    observer.error(err);
  };
  subscription = source.subscribe({
    next(value) {
      if (done) return;
      try {
        observer.next(value);
      } catch (err) {
        fail(err);
      }
    },
    error(err: unknown) {
      if (done) return;
      done = true;
      observer.error(err);
    },
    complete() {
      if (done) return;
      done = true;
      try {
        observer.complete();
      } catch (err) {
        observer.error(err);
      }
    },
  });
  if (failedEarly) subscription.unsubscribe();
  return subscription;
}
