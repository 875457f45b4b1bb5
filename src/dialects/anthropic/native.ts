import type { NativeAnswer, NativeStreamEvent } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { bodyShowing } from '../../wire/json-text.js';
import type { ReplyContext } from './response.js';

/** Whether an answer event carries an Anthropic upstream's own answer (native pass-through). */
export function anthropicNative(native: NativeAnswer | undefined): NativeAnswer | null {
  return native?.format === 'anthropic' ? native : null;
}

/**
 * An Anthropic upstream's message as the client gets it: exactly as it came (from its text when there is one, so a
 * tool input's large integer keeps its digits), but for `model`, which shows the name the client sent (as translated
 * answers do), whichever upstream model served it.
 */
export function nativeMessageJson(body: Record<string, unknown>, reply: ReplyContext, text?: string): string {
  return bodyShowing(body, 'model', reply.model, text);
}

/** message_start with the client's model name; any other event's data is not even parsed. */
function nativeData(item: NativeStreamEvent, reply: ReplyContext): string {
  if (item.event !== 'message_start') return item.data;
  let data: unknown;
  try {
    data = JSON.parse(item.data);
  } catch {
    return item.data;
  }
  if (!isRecord(data) || !isRecord(data.message) || !('model' in data.message)) return item.data;
  return JSON.stringify({ ...data, message: { ...data.message, model: reply.model } });
}

/** An Anthropic upstream's stream events in SSE framing, verbatim but for message_start's model (see above). */
export function nativeFrames(events: readonly NativeStreamEvent[], reply: ReplyContext): string {
  let out = '';
  for (const item of events) {
    // Data the upstream spread over several `data:` lines was joined with \n (JSON whitespace there): it goes out
    // over as many lines again, each a `data:` line (a bare line would be a field of its own to an SSE reader).
    const data = nativeData(item, reply);
    out += `event: ${item.event}\ndata: ${data.includes('\n') ? data.replaceAll('\n', '\ndata: ') : data}\n\n`;
  }
  return out;
}
