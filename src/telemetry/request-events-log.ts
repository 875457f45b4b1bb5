import type { EventBus } from '../bus/bus.js';
import type { Log } from '../log.js';

/**
 * Writes failed requests to the operator log: server-side faults as warnings, client mistakes at debug.
 * Only ids, status and the error message are logged, never request bodies or credentials.
 */
export function logRequestFailures(bus: EventBus, log: Log): () => void {
  return bus.on('request.failed', (event) => {
    const fields = {
      requestId: event.requestId,
      model: event.model,
      provider: event.provider,
      status: event.status,
      code: event.code,
      durationMs: Math.round(event.durationMs),
    };
    if (event.status >= 500) log.warn(fields, event.message);
    else log.debug(fields, event.message);
  });
}
