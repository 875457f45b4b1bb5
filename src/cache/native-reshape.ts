import type { NativeStreamEvent } from '../core/canonical.js';
import { eventsMessage, messageEvents } from '../wire/anthropic/message-events.js';
import { eventsResponse, responseEvents } from '../wire/gemini/response-events.js';
import { eventsResponse as responsesApiResponse } from '../wire/openai-responses/events-response.js';
import { RESPONSES_FORMAT } from '../wire/openai-responses/format.js';
import { responseEvents as responsesApiEvents } from '../wire/openai-responses/response-events.js';
import type { CachedNative } from './cache-store.js';

/**
 * A cached native answer in the shape a hit asks for: the upstream's whole message for a client that did not
 * stream, its events for one that does, made from the other when the answer was stored in the other shape (see
 * the wire formats' message-events and response-events). Null when it cannot be (a format without a converter, a
 * stored stream that does not make a whole message): the hit then serves the canonical answer.
 */
export function nativeBodyOf(native: CachedNative): Record<string, unknown> | null {
  if (native.body) return native.body;
  if (!native.events) return null;
  if (native.format === 'anthropic') return eventsMessage(native.events);
  if (native.format === 'gemini') return eventsResponse(native.events);
  if (native.format === RESPONSES_FORMAT) return responsesApiResponse(native.events);
  return null;
}

export function nativeEventsOf(native: CachedNative): NativeStreamEvent[] | null {
  if (native.events) return native.events;
  if (!native.body) return null;
  if (native.format === 'anthropic') return messageEvents(native.body);
  if (native.format === 'gemini') return responseEvents(native.body);
  if (native.format === RESPONSES_FORMAT) return responsesApiEvents(native.body);
  return null;
}
