import type { NativeStreamEvent } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { FINAL_EVENTS } from './event-chunks.js';

/**
 * The whole Response a Responses API stream made: the one its final event (response.completed or
 * response.incomplete) carries, as the stream's own events wrote it; null when the stream has none.
 */
export function eventsResponse(events: readonly NativeStreamEvent[]): Record<string, unknown> | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const item = events[i] as NativeStreamEvent;
    if (!FINAL_EVENTS.has(item.event)) continue;
    try {
      const data: unknown = JSON.parse(item.data);
      return isRecord(data) && isRecord(data.response) ? data.response : null;
    } catch {
      return null;
    }
  }
  return null;
}
