import type { StageOutcome } from './events.js';

/** How a stage run ended: its outcome, or `cancelled` when the client left before it did. */
export type StageEnd = StageOutcome | 'cancelled';

/**
 * A request's stage runs in the order they started: each one's name, start and end (`performance.now()`), the run
 * it ran inside (the onion's nesting) and how it ended. The runner writes it when the request carries one
 * (`ctx.timings.stages`), which a tracer recording the request gives it as the request starts (on the request
 * tracing channel): a handful of array pushes per stage, read once when the request ends, instead of two channel
 * events per stage, each handled by looking the request up by id (bench/RESULTS.md, issue 16). The stage tracing
 * channels are published all the same, for anyone else who listens.
 *
 * Kept as parallel arrays (one entry per run, by index) so a request's stages make no object per stage.
 */
export class StageTimeline {
  readonly names: string[] = [];
  readonly starts: number[] = [];
  /** NaN while the run is still going. */
  readonly ends: number[] = [];
  /** The index of the run this one started inside (the innermost one still going then), or -1 for the outermost. */
  readonly parents: number[] = [];
  /** Null while the run is still going. */
  readonly outcomes: Array<StageEnd | null> = [];
  /** What a failed run failed with (undefined for the others). */
  readonly errors: unknown[] = [];
  /**
   * Runs recorded. The arrays may hold more entries, from a request that used this timeline before (see `reset`):
   * they are overwritten, never shrunk, so a reused timeline allocates nothing.
   */
  private count = 0;

  get length(): number {
    return this.count;
  }

  /** A run of `name` started at `at`; returns its index. */
  started(name: string, at: number): number {
    const index = this.count++;
    this.parents[index] = this.innermostRunning(index);
    this.names[index] = name;
    this.starts[index] = at;
    this.ends[index] = Number.NaN;
    this.outcomes[index] = null;
    this.errors[index] = undefined;
    return index;
  }

  /** The run at `index` ended at `at`. */
  ended(index: number, at: number, outcome: StageEnd, error?: unknown): void {
    this.ends[index] = at;
    this.outcomes[index] = outcome;
    if (error !== undefined) this.errors[index] = error;
  }

  /** The innermost run still going (what starts now runs inside it), or -1; `below` leaves out the runs from it on. */
  innermostRunning(below = this.count): number {
    for (let index = below - 1; index >= 0; index--) if (Number.isNaN(this.ends[index])) return index;
    return -1;
  }

  /** Every run recorded has ended (no stage will write to the timeline again). */
  allEnded(): boolean {
    return this.innermostRunning() === -1;
  }

  /**
   * Empties the timeline for another request, keeping its arrays' room. Only for a timeline no stage run will write
   * to again (every run ended), and no failure kept (the errors of the last request are let go).
   */
  reset(): void {
    for (let index = 0; index < this.count; index++) this.errors[index] = undefined;
    this.count = 0;
  }
}
