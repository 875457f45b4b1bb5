import { collectDefaultMetrics, Registry } from 'prom-client';

let processRegistry: Registry | null = null;

/**
 * prom-client's default process metrics (memory, CPU, event-loop lag, GC, handles) in a registry of their own,
 * started once per process: they describe the process, and every gateway instance in it (tests run several)
 * shares them rather than each starting its own event-loop and GC observers.
 */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}
