import type { BucketRing } from './bucket-ring.js';

/**
 * One kind of sample (upstream attempts by provider, requests by route, ...) by subject, in one window per window
 * length its rules ask for: a bucket is a 300th of its own window, so two rules reading the same samples over one
 * minute and one hour each get a window of their own. At most `maxSubjects` subjects are kept, not counting those
 * `configured` says the config names (a route): clients' own names (a model asked for without a route) cannot
 * crowd those out, and the config bounds them.
 */
export class SubjectWindows<W extends BucketRing> {
  private readonly subjects = new Map<string, Map<number, W>>();
  /** The window lengths asked for, and when each was first asked for (its windows hold nothing from before). */
  private lengths = new Map<number, number>();

  constructor(
    private readonly make: (windowMs: number) => W,
    private readonly maxSubjects: number,
    private readonly configured: (subject: string) => boolean = () => false,
  ) {}

  /** The window lengths the rules ask for now; the windows of a length no longer asked for are dropped. */
  use(lengths: Iterable<number>, now: number): void {
    const next = new Map<number, number>();
    for (const length of lengths) next.set(length, this.lengths.get(length) ?? now);
    const gone = [...this.lengths.keys()].filter((length) => !next.has(length));
    this.lengths = next;
    if (gone.length === 0) return;
    for (const windows of this.subjects.values()) for (const length of gone) windows.delete(length);
  }

  /** When windows of this length began to be kept. */
  since(windowMs: number): number | undefined {
    return this.lengths.get(windowMs);
  }

  /** The subject's windows, to add a sample to: none when no rule reads them, or too many subjects are kept. */
  windowsOf(subject: string): Iterable<W> {
    if (this.lengths.size === 0) return [];
    let windows = this.subjects.get(subject);
    if (!windows) {
      if (this.subjects.size >= this.maxSubjects && !this.configured(subject)) return [];
      windows = new Map();
      this.subjects.set(subject, windows);
    }
    if (windows.size !== this.lengths.size) for (const length of this.lengths.keys()) if (!windows.has(length)) windows.set(length, this.make(length));
    return windows.values();
  }

  window(subject: string, windowMs: number): W | undefined {
    return this.subjects.get(subject)?.get(windowMs);
  }

  keys(): IterableIterator<string> {
    return this.subjects.keys();
  }

  /**
   * Drops the subjects with nothing left in any window, so they stop counting against `maxSubjects`: kept, a
   * thousand model names seen once (months of uptime, a client numbering its models) left no room for a route seen
   * after them, and its rules never fired.
   */
  prune(now: number): void {
    for (const [subject, windows] of this.subjects) {
      let empty = true;
      for (const window of windows.values()) if (window.count(now) > 0) empty = false;
      if (empty) this.subjects.delete(subject);
    }
  }

  /** Every window kept (for the engine's footprint). */
  *all(): Generator<W> {
    for (const windows of this.subjects.values()) yield* windows.values();
  }
}
