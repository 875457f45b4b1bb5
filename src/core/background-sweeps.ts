/** A background clean-up that runs on a timer (and on demand). */
export interface Sweeper {
  /** Sweeps now (also what the timer runs), or joins the sweep already running; resolves with what it deleted. */
  sweep(): Promise<number>;
  /** Stops the timer and any sweep in progress (between batches); resolves once nothing runs any more. */
  stop(): Promise<void>;
}

export interface SweepWork {
  /** One sweep: deletes in batches, checking `stopped` between them; resolves with how many it deleted. */
  run(stopped: () => boolean): Promise<number>;
  /** A sweep that failed (not called once stopped: a closing store may fail the last one). */
  failed(err: unknown): void;
  /** After each sweep, whether another should follow at once (something asked for one while it ran). */
  again?: () => boolean;
}

/**
 * Runs `work` shortly after start (1 s), then every `intervalMs`, never two at once. The timers never keep the
 * process alive. Shared by the request log's retention and the stored Responses' sweep.
 */
export function startSweeps(work: SweepWork, intervalMs: number): Sweeper & { running(): boolean } {
  let stopped = false;
  let running: Promise<number> | null = null;
  const isStopped = (): boolean => stopped;
  const sweep = (): Promise<number> => {
    if (stopped) return Promise.resolve(0);
    running ??= (async () => {
      try {
        return await work.run(isStopped);
      } catch (err) {
        if (!stopped) work.failed(err);
        return 0;
      } finally {
        running = null;
        if (!stopped && work.again?.()) setImmediate(() => void sweep());
      }
    })();
    return running;
  };
  const first = setTimeout(() => void sweep(), 1_000);
  const timer = setInterval(() => void sweep(), intervalMs);
  first.unref();
  timer.unref();
  return {
    sweep,
    running: () => running !== null,
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      await running;
    },
  };
}
