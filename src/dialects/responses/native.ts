import type { NativeAnswer, NativeStreamEvent } from '../../core/canonical.js';
import { bodyShowing, topLevelObjectSpan, withTopLevelString } from '../../wire/json-text.js';
import { RESPONSES_FORMAT } from '../../wire/openai-responses/format.js';

/** Whether an answer event carries an upstream's own Responses answer (native pass-through). */
export function responsesNative(native: NativeAnswer | undefined): NativeAnswer | null {
  return native?.format === RESPONSES_FORMAT ? native : null;
}

/**
 * An upstream's Response as the client gets it: exactly as it came (from its text, so numbers keep their digits),
 * but for `model`, which shows the name the client sent, whichever upstream model served it.
 */
export function nativeResponseJson(body: Record<string, unknown>, model: string, text?: string): string {
  return bodyShowing(body, 'model', model, text);
}

/** The events that carry the whole Response (and so its model); the others (deltas, items, parts) are left unread. */
const RESPONSE_EVENTS: ReadonlySet<string> = new Set(['response.created', 'response.in_progress', 'response.completed', 'response.incomplete', 'response.failed', 'response.queued']);

/**
 * An event's data with the model of the Response it carries (response.created, .in_progress, .completed, ...)
 * showing the client's name, changed in place in the upstream's text; any other event's data as it came (an event
 * without a name is looked into, as it may be any).
 */
function eventData(event: string, data: string, model: string): string {
  if (event !== '' && !RESPONSE_EVENTS.has(event)) return data;
  const span = topLevelObjectSpan(data, 'response');
  if (span === null) return data;
  const [start, end] = span;
  const shown = withTopLevelString(data.slice(start, end), 'model', model, false);
  return shown === null ? data : data.slice(0, start) + shown + data.slice(end);
}

/** An upstream's own Responses stream events in SSE framing, verbatim but for the model name (see above). */
export function nativeFrames(events: readonly NativeStreamEvent[], model: string): string {
  let out = '';
  for (const item of events) {
    const data = eventData(item.event, item.data, model);
    // Data the upstream spread over several `data:` lines was joined with \n: it goes out over as many lines again.
    const lines = data.includes('\n') ? data.replaceAll('\n', '\ndata: ') : data;
    out += item.event === '' ? `data: ${lines}\n\n` : `event: ${item.event}\ndata: ${lines}\n\n`;
  }
  return out;
}

/**
 * Where an upstream's own stream stands, for ending it in its own terms when it fails after it began: the Response
 * its response.created carried (shown with the client's model) and the sequence number of its last event. Only
 * response.created is parsed; other events are searched for their number.
 */
export class NativeStreamPosition {
  created: Record<string, unknown> | null = null;
  lastSequence = -1;

  constructor(private readonly model: string) {}

  saw(events: readonly NativeStreamEvent[]): void {
    for (const item of events) {
      if (this.created === null && item.event === 'response.created') {
        try {
          const data = JSON.parse(item.data) as { response?: unknown };
          if (typeof data.response === 'object' && data.response !== null) this.created = { ...(data.response as Record<string, unknown>), model: this.model };
        } catch {
          // Not JSON: the decoder would have refused it; nothing to keep.
        }
      }
    }
    const last = events.at(-1);
    const found = last ? /"sequence_number"\s*:\s*(\d+)/.exec(last.data) : null;
    if (found) this.lastSequence = Number(found[1]);
  }
}
