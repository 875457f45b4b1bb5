// Turns a soak's samples into a verdict. Memory in a garbage-collected process is a saw-tooth, so the trend is read
// from medians of thirds (one GC landing on the last sample cannot decide it), after a warm-up that lets the JIT,
// the pools and the caches reach their working size.
import type { ProcessSample } from './process-sampler.js';
import type { ChurnReport } from './config-churn.js';
import type { TrafficReport } from './traffic.js';

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Median of the last third over median of the first third, minus one: 0.1 is 10% growth. */
export function growthOfThirds(values: readonly number[]): number {
  const third = Math.floor(values.length / 3);
  if (third < 2) return Number.NaN;
  return median(values.slice(-third)) / median(values.slice(0, third)) - 1;
}

/** Least-squares slope of y over x (per unit of x). */
export function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return Number.NaN;
  let sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (let i = 0; i < n; i++) {
    const x = xs[i] as number, y = ys[i] as number;
    sx += x; sy += y; sxx += x * x; sxy += x * y;
  }
  const denominator = n * sxx - sx * sx;
  return denominator === 0 ? Number.NaN : (n * sxy - sx * sy) / denominator;
}

/** The gateway with no load and idle connections closed: fds and handles, and memory after a full collection. */
export interface IdleCounts {
  fds: number;
  handles: number;
  heapUsedBytes: number;
  rssAnonBytes: number;
}

export interface SoakLimits {
  /** Largest accepted RSS growth (medians of thirds), as a fraction. */
  rssGrowth: number;
  /** Largest accepted typical event-loop lag p99 (the median of the per-sample p99s), in ms. */
  lagP99Ms: number;
  /** Largest accepted growth of the idle gateway's memory after a full collection (heap used, anonymous RSS), as a fraction. */
  retainedGrowth: number;
  /** Fds and handles the idle gateway may hold beyond its idle count after warm-up. */
  idleSlack: number;
}

export interface SoakFigures {
  /** Anonymous RSS (see ProcessSample.rssAnonBytes), medians of the first and last thirds of the samples. */
  rssFirstThirdBytes: number;
  rssLastThirdBytes: number;
  rssGrowth: number;
  /** Linear fit over every sample, in % of the first third's median per minute (reported, not judged). */
  rssSlopePctPerMin: number;
  lagP99MedianMs: number;
  lagP99MaxMs: number;
}

export function soakFigures(samples: readonly ProcessSample[]): SoakFigures {
  const rss = samples.map((s) => s.rssAnonBytes);
  const third = Math.max(1, Math.floor(rss.length / 3));
  const first = median(rss.slice(0, third));
  const lags = samples.map((s) => s.lagP99Ms).filter(Number.isFinite);
  return {
    rssFirstThirdBytes: first,
    rssLastThirdBytes: median(rss.slice(-third)),
    rssGrowth: growthOfThirds(rss),
    rssSlopePctPerMin: (slope(samples.map((s) => s.atSec / 60), rss) / first) * 100,
    lagP99MedianMs: median(lags),
    lagP99MaxMs: lags.length ? Math.max(...lags) : Number.NaN,
  };
}

/** Every reason the soak failed; empty when it passed. */
export function soakProblems(input: {
  samples: readonly ProcessSample[];
  idleBefore: IdleCounts;
  idleAfter: IdleCounts;
  traffic: readonly TrafficReport[];
  churn: ChurnReport;
  limits: SoakLimits;
}): string[] {
  const { samples, idleBefore, idleAfter, limits } = input;
  const problems: string[] = [];
  const figures = soakFigures(samples);
  if (samples.length < 6) problems.push(`too few samples to judge a trend (${samples.length})`);
  if (!(figures.rssGrowth <= limits.rssGrowth)) {
    problems.push(`anonymous RSS grew ${(figures.rssGrowth * 100).toFixed(1)}% (medians of thirds ${mb(figures.rssFirstThirdBytes)} -> ${mb(figures.rssLastThirdBytes)}), over ${limits.rssGrowth * 100}%`);
  }
  if (!(figures.lagP99MedianMs < limits.lagP99Ms)) problems.push(`event-loop lag p99 typically ${figures.lagP99MedianMs.toFixed(1)} ms, not under ${limits.lagP99Ms} ms`);
  const heapGrowth = idleAfter.heapUsedBytes / idleBefore.heapUsedBytes - 1;
  if (!(heapGrowth <= limits.retainedGrowth)) problems.push(`heap retained at idle grew ${(heapGrowth * 100).toFixed(1)}% (${mb(idleBefore.heapUsedBytes)} -> ${mb(idleAfter.heapUsedBytes)}), over ${limits.retainedGrowth * 100}%`);
  const anonGrowth = idleAfter.rssAnonBytes / idleBefore.rssAnonBytes - 1;
  if (!(anonGrowth <= limits.retainedGrowth)) problems.push(`anonymous RSS at idle grew ${(anonGrowth * 100).toFixed(1)}% (${mb(idleBefore.rssAnonBytes)} -> ${mb(idleAfter.rssAnonBytes)}), over ${limits.retainedGrowth * 100}%`);
  if (idleAfter.fds > idleBefore.fds + limits.idleSlack) problems.push(`open fds at idle: ${idleBefore.fds} after warm-up, ${idleAfter.fds} after the load`);
  if (idleAfter.handles > idleBefore.handles + limits.idleSlack) problems.push(`active handles at idle: ${idleBefore.handles} after warm-up, ${idleAfter.handles} after the load`);
  for (const report of input.traffic) {
    if (report.unexpectedTotal > 0) problems.push(`${report.unexpectedTotal} unexpected answers or client errors, e.g. ${report.unexpected.slice(0, 5).join(' | ')}`);
  }
  for (const failure of input.churn.failures) problems.push(`config change failed: ${failure}`);
  return problems;
}

export function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
