import { Observable, Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { subscribeGuarded } from '../../src/core/subscribe-guarded.js';

describe('subscribeGuarded', () => {
  it('turns a throw in next into the observer’s own error, once, and unsubscribes the source', () => {
    const source = new Subject<number>();
    const seen: number[] = [];
    const errors: unknown[] = [];
    subscribeGuarded(source, {
      next(value) {
        if (value === 2) throw new TypeError('bad event');
        seen.push(value);
      },
      error: (err) => errors.push(err),
      complete: () => errors.push('complete'),
    });
    source.next(1);
    source.next(2);
    source.next(3);
    source.complete();
    expect(seen).toEqual([1]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TypeError);
    expect(source.observed).toBe(false);
  });

  it('unsubscribes a source whose first event, emitted while subscribing, makes next throw', () => {
    let tornDown = false;
    const source = new Observable<number>((subscriber) => {
      subscriber.next(1);
      subscriber.next(2);
      return () => (tornDown = true);
    });
    const errors: unknown[] = [];
    const subscription = subscribeGuarded(source, {
      next: () => {
        throw new Error('boom');
      },
      error: (err) => errors.push(err),
      complete: () => undefined,
    });
    expect(errors).toHaveLength(1);
    expect(tornDown).toBe(true);
    expect(subscription.closed).toBe(true);
  });

  it('turns a throw in complete into the error, and passes errors and completion through otherwise', () => {
    const errors: unknown[] = [];
    subscribeGuarded(new Observable<number>((subscriber) => subscriber.complete()), {
      next: () => undefined,
      error: (err) => errors.push(err),
      complete: () => {
        throw new Error('after the end');
      },
    });
    expect(errors).toEqual([new Error('after the end')]);

    const events: string[] = [];
    subscribeGuarded(new Observable<number>((subscriber) => subscriber.error(new Error('upstream'))), {
      next: () => events.push('next'),
      error: (err) => events.push((err as Error).message),
      complete: () => events.push('complete'),
    });
    expect(events).toEqual(['upstream']);
  });
});
