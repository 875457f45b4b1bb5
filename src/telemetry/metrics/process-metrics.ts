import { collectDefaultMetrics, Registry } from 'prom-client';
import { EVENT_LOOP_DELAY_SERIES, registerEventLoopDelay } from './event-loop-delay.js';

/**
 * prom-client samples the event loop on a timer it starts itself (every 10 ms by default). Given this interval
 * (about 24 days, the largest a libuv timer takes as a 32-bit count) its timer never fires; its seven histogram
 * series are replaced by registerEventLoopDelay's, which sample every 100 ms.
 */
const PROM_CLIENT_SAMPLE_INTERVAL_MS = 2 ** 31 - 1;

let processRegistry: Registry | null = null;

/**
 * prom-client's default process metrics (memory, CPU, event-loop lag, GC, handles) in a registry of their own,
 * started once per process: they describe the process, and every gateway instance in it (tests run several)
 * shares them rather than each starting its own event-loop and GC observers.
 */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: PROM_CLIENT_SAMPLE_INTERVAL_MS });
    for (const name of Object.keys(EVENT_LOOP_DELAY_SERIES)) processRegistry.removeSingleMetric(name);
    registerEventLoopDelay(processRegistry);
  }
  return processRegistry;
}
