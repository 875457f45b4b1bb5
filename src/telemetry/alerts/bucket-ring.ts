/**
 * A window rule's window is cut into this many buckets whatever its length (one a second for the default five
 * minutes): its edge is then exact to a 300th of it at any traffic, and what a subject keeps is bounded by the
 * bucket count, not by its requests. (Raw samples, capped at 20,000 a subject, shrank a five-minute window to
 * about 200 s at 100 requests a second, and to 20 s at 1,000.)
 */
export const BUCKETS_PER_WINDOW = 300;

/**
 * The buckets of one window, in a ring: bucket `k` holds what happened in [k × bucketMs, (k + 1) × bucketMs) and
 * lives in slot `k % slots`. The ring holds one bucket more than the window spans, so the oldest, partly before
 * the window, is kept: a window covers at least its configured length and less than two buckets more. Adding
 * and reading are O(1) (reading moves the ring forward, clearing at most each slot once per bucket passed).
 */
export abstract class BucketRing {
  readonly bucketMs: number;
  protected readonly slots: number;
  /** Samples per slot, and in the whole ring. */
  protected readonly counts: Float64Array;
  private total = 0;
  /** The newest bucket's number; the ring holds buckets `head - slots + 1` to `head`. */
  private head = -Infinity;

  constructor(windowMs: number) {
    this.bucketMs = Math.max(1, Math.ceil(windowMs / BUCKETS_PER_WINDOW));
    this.slots = Math.ceil(windowMs / this.bucketMs) + 1;
    this.counts = new Float64Array(this.slots);
  }

  /** Samples in the window ending at `now`. */
  count(now: number): number {
    this.advance(now);
    return this.total;
  }

  /** The buckets the ring holds: what its memory is bounded by, whatever the traffic. */
  bucketCount(): number {
    return this.slots;
  }

  /** The slot a sample at `at` goes in, counted there. */
  protected place(at: number): number {
    const bucket = Math.floor(at / this.bucketMs);
    if (bucket > this.head) this.moveTo(bucket);
    // The clock stepped back further than the window (a wall-clock correction): what the ring holds is from a time
    // that has not come yet, and would stay in the window until then.
    else if (bucket <= this.head - this.slots) this.restart(bucket);
    const slot = this.slotOf(bucket);
    (this.counts[slot] as number)++;
    this.total++;
    return slot;
  }

  /** Moves the ring forward to `now`: buckets that left the window are cleared. */
  protected advance(now: number): void {
    const bucket = Math.floor(now / this.bucketMs);
    if (bucket > this.head) this.moveTo(bucket);
  }

  /** Empties one slot; a subclass clears what it keeps per slot, and takes it out of its own totals. */
  protected clear(slot: number): void {
    this.total -= this.counts[slot] as number;
    this.counts[slot] = 0;
  }

  private moveTo(bucket: number): void {
    const passed = Math.min(bucket - this.head, this.slots);
    for (let k = bucket - passed + 1; k <= bucket; k++) {
      const slot = this.slotOf(k);
      if (this.counts[slot] !== 0) this.clear(slot);
    }
    this.head = bucket;
  }

  /**
   * The slot of bucket `k`, for any `k`: times near 0 (a monotonic clock's, early in the process) make the first
   * buckets the ring clears negative, and `%` keeps their sign (a slot of -3 read as undefined made the count NaN).
   */
  private slotOf(k: number): number {
    return ((k % this.slots) + this.slots) % this.slots;
  }

  private restart(bucket: number): void {
    for (let slot = 0; slot < this.slots; slot++) if (this.counts[slot] !== 0) this.clear(slot);
    this.head = bucket;
  }
}

/** Requests and how many of them failed (or ended 5xx), over one window. */
export class CountWindow extends BucketRing {
  private readonly failures: Float64Array;
  private failed = 0;

  constructor(windowMs: number) {
    super(windowMs);
    this.failures = new Float64Array(this.slots);
  }

  add(at: number, failed: boolean): void {
    const slot = this.place(at);
    if (!failed) return;
    (this.failures[slot] as number)++;
    this.failed++;
  }

  /** Requests and failures in the window ending at `now`. */
  read(now: number): { count: number; failed: number } {
    const count = this.count(now);
    return { count, failed: this.failed };
  }

  protected override clear(slot: number): void {
    super.clear(slot);
    this.failed -= this.failures[slot] as number;
    this.failures[slot] = 0;
  }
}
