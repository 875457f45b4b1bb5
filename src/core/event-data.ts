import type { NativeStreamEvent } from './canonical.js';
import { isRecord } from './is-record.js';

/** A stream event's data as the JSON object it holds; null when it holds none (not JSON, or not an object). */
export function eventData(item: NativeStreamEvent): Record<string, unknown> | null {
  try {
    const data: unknown = JSON.parse(item.data);
    return isRecord(data) ? data : null;
  } catch {
    return null;
  }
}
