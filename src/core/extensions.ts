/**
 * Typed per-request data that stages and plugins share without the core knowing of it: a plugin declares a key
 * once (`const SCORE = contextKey<number>('my-plugin.score')`) and `ctx.extensions.get(SCORE)` is a number to the
 * compiler. Keys compare by id, so two copies of a plugin package still meet.
 */
export interface ContextKey<T> {
  readonly id: string;
  /** Never set: carries the value's type. */
  readonly __value?: T;
}

export function contextKey<T>(id: string): ContextKey<T> {
  return { id };
}

export class Extensions {
  private values: Map<string, unknown> | null = null;

  get<T>(key: ContextKey<T>): T | undefined {
    return this.values?.get(key.id) as T | undefined;
  }

  set<T>(key: ContextKey<T>, value: T): void {
    (this.values ??= new Map()).set(key.id, value);
  }

  has(key: ContextKey<unknown>): boolean {
    return this.values?.has(key.id) ?? false;
  }

  delete(key: ContextKey<unknown>): boolean {
    return this.values?.delete(key.id) ?? false;
  }
}
