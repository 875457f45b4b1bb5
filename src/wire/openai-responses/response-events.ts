import type { NativeStreamEvent } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';

type Json = Record<string, unknown>;

/** The events of one output item, after its output_item.added and before its output_item.done. */
function partEvents(item: Json, at: Json, emit: (type: string, fields: Json) => void): void {
  if (item.type === 'message' && Array.isArray(item.content)) {
    item.content.forEach((part: unknown, j) => {
      if (!isRecord(part)) return;
      const where = { ...at, content_index: j };
      if (part.type === 'output_text') {
        const text = typeof part.text === 'string' ? part.text : '';
        const logprobs = Array.isArray(part.logprobs) ? part.logprobs : [];
        emit('response.content_part.added', { ...where, part: { ...part, text: '', annotations: [], ...(part.logprobs === undefined ? {} : { logprobs: [] }) } });
        if (text !== '') emit('response.output_text.delta', { ...where, delta: text, logprobs });
        if (Array.isArray(part.annotations)) part.annotations.forEach((annotation: unknown, k) => emit('response.output_text.annotation.added', { ...where, annotation_index: k, annotation }));
        emit('response.output_text.done', { ...where, text, logprobs });
      } else if (part.type === 'refusal') {
        const refusal = typeof part.refusal === 'string' ? part.refusal : '';
        emit('response.content_part.added', { ...where, part: { ...part, refusal: '' } });
        if (refusal !== '') emit('response.refusal.delta', { ...where, delta: refusal });
        emit('response.refusal.done', { ...where, refusal });
      } else emit('response.content_part.added', { ...where, part });
      emit('response.content_part.done', { ...where, part });
    });
  } else if (item.type === 'function_call') {
    const args = typeof item.arguments === 'string' ? item.arguments : '';
    if (args !== '') emit('response.function_call_arguments.delta', { ...at, delta: args });
    emit('response.function_call_arguments.done', { ...at, name: item.name, arguments: args });
  } else if (item.type === 'reasoning' && Array.isArray(item.summary)) {
    item.summary.forEach((part: unknown, j) => {
      if (!isRecord(part)) return;
      const where = { ...at, summary_index: j };
      const text = typeof part.text === 'string' ? part.text : '';
      emit('response.reasoning_summary_part.added', { ...where, part: { ...part, text: '' } });
      if (text !== '') emit('response.reasoning_summary_text.delta', { ...where, delta: text });
      emit('response.reasoning_summary_text.done', { ...where, text });
      emit('response.reasoning_summary_part.done', { ...where, part });
    });
  }
}

/** An output item as its output_item.added shows it: still in progress, before its content, arguments or summary. */
function startedItem(item: Json): Json {
  if (item.type === 'message') return { ...item, status: 'in_progress', content: [] };
  if (item.type === 'function_call') return { ...item, status: 'in_progress', arguments: '' };
  if (item.type === 'reasoning') {
    // The encrypted content comes with the finished item only, as OpenAI streams it.
    const { encrypted_content: _later, ...started } = item;
    return { ...started, summary: [] };
  }
  return item;
}

/**
 * The documented event stream of a whole Response (the reverse of eventsResponse), for a streaming client served an
 * answer stored whole: response.created and .in_progress with the Response before its output, each output item as
 * output_item.added, its parts' or arguments' or summary's events (each text in one delta), output_item.done with the
 * item as the Response holds it, then response.completed (or .incomplete) with the Response itself. So every item
 * reaches the client as OpenAI wrote it (reasoning with its encrypted content, built-in tools' calls, annotations),
 * with the Response's own id.
 */
export function responseEvents(response: Json): NativeStreamEvent[] {
  const events: NativeStreamEvent[] = [];
  const emit = (type: string, fields: Json): void => {
    events.push({ event: type, data: JSON.stringify({ type, sequence_number: events.length, ...fields }) });
  };
  const open = { ...response, status: 'in_progress', output: [], usage: null, incomplete_details: null, ...('completed_at' in response ? { completed_at: null } : {}) };
  emit('response.created', { response: open });
  emit('response.in_progress', { response: open });
  const output = Array.isArray(response.output) ? response.output : [];
  output.forEach((item: unknown, index) => {
    if (!isRecord(item)) return;
    emit('response.output_item.added', { output_index: index, item: startedItem(item) });
    partEvents(item, { item_id: item.id, output_index: index }, emit);
    emit('response.output_item.done', { output_index: index, item });
  });
  emit(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
  return events;
}
