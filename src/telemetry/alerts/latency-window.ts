import { BucketRing } from './bucket-ring.js';

/**
 * How far a window's p95 may be from the exact nearest-rank p95 of its samples, relatively (durations under 1 ms:
 * within 0.5 ms). Each bucket keeps a histogram of log-spaced bins, each bin (γ = 1.02 / 0.98 times as wide as the
 * one before) standing for one value within 2% of everything in it, so a window's p95 is found by adding the
 * bucket histograms up: a fixed size per bucket however many requests it holds, where sorting raw samples cost
 * memory and time by the traffic.
 */
export const P95_RELATIVE_ERROR = 0.02;

const GROWTH = (1 + P95_RELATIVE_ERROR) / (1 - P95_RELATIVE_ERROR);
const LOG_GROWTH = Math.log(GROWTH);
/** Durations at or over this (2.8 hours; no answer takes that long) share the last bin. */
const LARGEST_MS = 1e7;
/** Bin 0: under 1 ms; bin i: [γ^(i-1), γ^i); the last: from LARGEST_MS up. */
const BINS = 2 + Math.ceil(Math.log(LARGEST_MS) / LOG_GROWTH);

function binOf(ms: number): number {
  if (ms < 1) return 0;
  return Math.min(BINS - 1, 1 + Math.floor(Math.log(ms) / LOG_GROWTH));
}

/**
 * The value a bin stands for: 2γ^i / (γ + 1) is within P95_RELATIVE_ERROR of both its edges. The first and the last
 * bin are bounded by the window's smallest and largest sample instead (see `p95`).
 */
function valueOf(bin: number): number {
  if (bin === 0) return 0.5;
  if (bin === BINS - 1) return Infinity;
  return (2 * GROWTH ** bin) / (GROWTH + 1);
}

/** Durations (latency, time to first token) over one window, for its p95. */
export class LatencyWindow extends BucketRing {
  /** Per slot, made when the slot first holds a sample and then reused. */
  private readonly histograms: Array<Uint32Array | undefined>;
  /** The bins of the whole window: the slots' histograms added up, kept as samples come and buckets go. */
  private readonly bins = new Float64Array(BINS);
  private readonly mins: Float64Array;
  private readonly maxes: Float64Array;

  constructor(windowMs: number) {
    super(windowMs);
    this.histograms = new Array<Uint32Array | undefined>(this.slots);
    this.mins = new Float64Array(this.slots).fill(Infinity);
    this.maxes = new Float64Array(this.slots).fill(-Infinity);
  }

  add(at: number, ms: number): void {
    const value = Number.isFinite(ms) && ms > 0 ? ms : 0;
    const slot = this.place(at);
    const bin = binOf(value);
    const histogram = (this.histograms[slot] ??= new Uint32Array(BINS));
    (histogram[bin] as number)++;
    (this.bins[bin] as number)++;
    if (value < (this.mins[slot] as number)) this.mins[slot] = value;
    if (value > (this.maxes[slot] as number)) this.maxes[slot] = value;
  }

  /**
   * The nearest-rank 95th percentile of the window ending at `now` (null when it is empty), within
   * P95_RELATIVE_ERROR: the value of the bin holding that rank, kept between the window's smallest and largest
   * sample (which makes it exact when they are all the same).
   */
  p95(now: number): number | null {
    const count = this.count(now);
    if (count === 0) return null;
    const rank = Math.max(1, Math.ceil(count * 0.95));
    let bin = 0;
    for (let seen = this.bins[0] as number; seen < rank && bin < BINS - 1; ) seen += this.bins[++bin] as number;
    let min = Infinity;
    let max = -Infinity;
    for (let slot = 0; slot < this.slots; slot++) {
      if (this.counts[slot] === 0) continue;
      min = Math.min(min, this.mins[slot] as number);
      max = Math.max(max, this.maxes[slot] as number);
    }
    return Math.min(max, Math.max(min, valueOf(bin)));
  }

  /** Histograms made so far: what the window's memory grows with (at most one per slot). */
  histogramCount(): number {
    return this.histograms.reduce((n, histogram) => n + (histogram ? 1 : 0), 0);
  }

  protected override clear(slot: number): void {
    super.clear(slot);
    const histogram = this.histograms[slot];
    if (histogram) {
      for (let bin = 0; bin < BINS; bin++) {
        const n = histogram[bin] as number;
        if (n !== 0) (this.bins[bin] as number) -= n;
      }
      histogram.fill(0);
    }
    this.mins[slot] = Infinity;
    this.maxes[slot] = -Infinity;
  }
}
