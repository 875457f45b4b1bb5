import { EventBus } from '../../src/bus/bus.js';
import { BUS, LOG, ServiceRegistry } from '../../src/services.js';
import { createLog } from '../../src/log.js';

/**
 * The services a pipeline needs to run stages that ask for nothing else: the bus and a silent log. No database,
 * no transport: a stage that requires more fails its construction, naming the service.
 */
export function runnerServices(bus: EventBus = new EventBus()): ServiceRegistry {
  return new ServiceRegistry().set(BUS, bus).set(LOG, createLog('silent'));
}
