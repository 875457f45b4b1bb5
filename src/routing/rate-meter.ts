/** Counts events in one-second buckets to answer "how many per second lately" cheaply. */
export class RateMeter {
  private readonly buckets: Float64Array;
  private readonly seconds: Float64Array;

  constructor(private readonly spanSeconds = 10) {
    this.buckets = new Float64Array(spanSeconds);
    this.seconds = new Float64Array(spanSeconds).fill(-1);
  }

  mark(now: number = Date.now()): void {
    const second = Math.floor(now / 1000);
    const slot = second % this.spanSeconds;
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.buckets[slot] = 0;
    }
    this.buckets[slot] = (this.buckets[slot] ?? 0) + 1;
  }

  /** Events per second over the last `spanSeconds` whole seconds and the current one. */
  perSecond(now: number = Date.now()): number {
    const second = Math.floor(now / 1000);
    let total = 0;
    for (let i = 0; i < this.spanSeconds; i++) {
      const at = this.seconds[i] as number;
      if (at >= 0 && second - at < this.spanSeconds) total += this.buckets[i] as number;
    }
    return total / this.spanSeconds;
  }
}
