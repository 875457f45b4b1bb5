// One soak, start to end: a warm-up under load, the idle counts, the measured load (with config churn and
// sampling), the idle counts again. Shared by bench/soak.ts (long form, figures) and test/e2e/soak.test.ts
// (short form, pass/fail on leak trends).
import { startConfigChurn, type ChurnReport } from './config-churn.js';
import type { IdleCounts } from './leak-verdict.js';
import { openFds, sampleProcess, type ProcessSample } from './process-sampler.js';
import { startSoakRig, type SoakRig } from './soak-rig.js';
import { startTraffic, type TrafficReport } from './traffic.js';

export interface SoakOptions {
  /** Length of the measured load, after the warm-up. */
  durationSec: number;
  warmupSec: number;
  sampleEverySec: number;
  churnEverySec: number;
  /** Requests per second offered, and the most in flight at once. */
  rate: number;
  maxInFlight: number;
  /** Called with each sample as it is taken, and the load's tally so far (the bench prints them). */
  onSample?: (sample: ProcessSample, traffic: TrafficReport) => void;
}

export interface SoakResult {
  samples: ProcessSample[];
  idleBefore: IdleCounts;
  idleAfter: IdleCounts;
  warmup: TrafficReport;
  load: TrafficReport;
  churn: ChurnReport;
  /** Samples that could not be taken (a scrape that failed), described. */
  sampleFailures: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/**
 * Fds and handles once nothing is in flight: the upstream drops the gateway's idle keep-alive connections (which
 * would otherwise linger for the pool's idle timeout), then the lowest of a few readings is taken, since a scrape
 * or a timer firing can hold one briefly.
 */
async function idleCounts(rig: SoakRig): Promise<IdleCounts> {
  await sleep(300);
  rig.upstream.closeIdleConnections();
  await sleep(700);
  const startedAt = performance.now();
  const readings: Array<{ fds: number; handles: number }> = [];
  for (let i = 0; i < 5; i++) {
    const sample = await sampleProcess(rig.gateway.serverPid, `${rig.gateway.url}/metrics`, startedAt);
    readings.push({ fds: openFds(rig.gateway.serverPid), handles: sample.handles });
    await sleep(200);
  }
  // What stays after a full collection: memory the gateway still references.
  await rig.collectGarbage();
  const collected = await sampleProcess(rig.gateway.serverPid, `${rig.gateway.url}/metrics`, startedAt);
  return {
    fds: Math.min(...readings.map((r) => r.fds)),
    handles: Math.min(...readings.map((r) => r.handles)),
    heapUsedBytes: collected.heapUsedBytes,
    rssAnonBytes: collected.rssAnonBytes,
  };
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const rig = await startSoakRig();
  try {
    const load = { url: rig.gateway.url, key: rig.key, rate: options.rate, maxInFlight: options.maxInFlight };
    const warming = startTraffic(load);
    await sleep(options.warmupSec * 1000);
    const warmup = await warming.stop();
    const idleBefore = await idleCounts(rig);

    const samples: ProcessSample[] = [];
    const sampleFailures: string[] = [];
    const startedAt = performance.now();
    const traffic = startTraffic(load);
    const churn = startConfigChurn({ url: rig.gateway.url, upstreamUrl: rig.upstream.url, configPath: rig.configPath, everyMs: options.churnEverySec * 1000 });
    // Discard the scrape at the start: its lag p99 covers the idle pause before the load.
    await sampleProcess(rig.gateway.serverPid, `${rig.gateway.url}/metrics`, startedAt).catch(() => undefined);
    const end = startedAt + options.durationSec * 1000;
    while (performance.now() < end) {
      await sleep(Math.min(options.sampleEverySec * 1000, Math.max(0, end - performance.now())));
      try {
        const sample = await sampleProcess(rig.gateway.serverPid, `${rig.gateway.url}/metrics`, startedAt);
        samples.push(sample);
        options.onSample?.(sample, traffic.snapshot());
      } catch (err) {
        sampleFailures.push((err as Error).message);
      }
    }
    const [loadReport, churnReport] = await Promise.all([traffic.stop(), churn.stop()]);
    const idleAfter = await idleCounts(rig);
    return { samples, idleBefore, idleAfter, warmup, load: loadReport, churn: churnReport, sampleFailures };
  } finally {
    await rig.stop();
  }
}
