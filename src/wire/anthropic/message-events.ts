import type { NativeStreamEvent } from '../../core/canonical.js';
import { eventData } from '../../core/event-data.js';
import { isRecord } from '../../core/is-record.js';
import type { Json } from './shapes.js';

/**
 * An Anthropic message and its stream, each made from the other, with nothing lost that either carries: thinking
 * and its signature, redacted thinking, citations, server tool calls and their results, usage details. For a cached
 * native answer asked for in the other shape (stored whole, asked as a stream, or the other way round): the events
 * are the ones Anthropic sends for such a message, and the message is what the official SDK's MessageStream
 * accumulates from the events (`finalMessage()`), field for field.
 */

/** Blocks whose input arrives as `input_json_delta` pieces (the SDK's `tracksToolInput`, and MCP tool calls). */
const TOOL_INPUT_BLOCKS = new Set(['tool_use', 'server_tool_use', 'mcp_tool_use']);

function event(type: string, data: Json): NativeStreamEvent {
  return { event: type, data: JSON.stringify({ type, ...data }) };
}

/** A content block's `content_block_start` form and the deltas that complete it. */
function blockEvents(block: Json, index: number, out: NativeStreamEvent[]): void {
  const delta = (value: Json): void => void out.push(event('content_block_delta', { index, delta: value }));
  switch (block.type) {
    case 'text': {
      const { text, citations, ...rest } = block;
      // A text block's citations arrive one by one after an empty list (a `null` of a block without them stays).
      const start = 'citations' in block ? { ...rest, text: '', citations: Array.isArray(citations) ? [] : citations } : { ...rest, text: '' };
      out.push(event('content_block_start', { index, content_block: start }));
      if (typeof text === 'string' && text !== '') delta({ type: 'text_delta', text });
      if (Array.isArray(citations)) for (const citation of citations) delta({ type: 'citations_delta', citation });
      break;
    }
    case 'thinking': {
      const { thinking, signature, ...rest } = block;
      out.push(event('content_block_start', { index, content_block: { ...rest, thinking: '' } }));
      if (typeof thinking === 'string' && thinking !== '') delta({ type: 'thinking_delta', thinking });
      if (typeof signature === 'string' && signature !== '') delta({ type: 'signature_delta', signature });
      break;
    }
    default: {
      if (TOOL_INPUT_BLOCKS.has(block.type as string)) {
        const { input, ...rest } = block;
        out.push(event('content_block_start', { index, content_block: { ...rest, input: {} } }));
        const json = input === undefined ? '' : JSON.stringify(input);
        if (json !== '' && json !== '{}') delta({ type: 'input_json_delta', partial_json: json });
        break;
      }
      // Redacted thinking, tool results, and blocks Anthropic adds later arrive whole in their start event.
      out.push(event('content_block_start', { index, content_block: block }));
    }
  }
  out.push(event('content_block_stop', { index }));
}

/** The stream Anthropic sends for `message`: message_start, each block's start, deltas and stop, message_delta, message_stop. */
export function messageEvents(message: Json): NativeStreamEvent[] {
  const { content, stop_reason, stop_sequence, stop_details, container, usage, ...rest } = message;
  const blocks = Array.isArray(content) ? content.filter(isRecord) : [];
  const counts = isRecord(usage) ? usage : {};
  const out: NativeStreamEvent[] = [
    // message_start carries the input side of the usage; message_delta the totals (as Anthropic sends them).
    event('message_start', { message: { ...rest, content: [], stop_reason: null, stop_sequence: null, usage: { ...counts, output_tokens: 0 } } }),
  ];
  blocks.forEach((block, index) => blockEvents(block, index, out));
  const delta: Json = { stop_reason: stop_reason ?? null, stop_sequence: stop_sequence ?? null };
  if (stop_details !== undefined) delta.stop_details = stop_details;
  if (container !== undefined && container !== null) delta.container = container;
  out.push(event('message_delta', { delta, usage: counts }));
  out.push(event('message_stop', {}));
  return out;
}

/** Usage counters message_delta carries as whole-message totals: they replace message_start's when present. */
const TOTALS = ['input_tokens', 'cache_creation_input_tokens', 'cache_read_input_tokens', 'server_tool_use', 'output_tokens_details'];

/**
 * The message a stream of events makes, as the SDK accumulates it; null when the events do not make a whole message
 * (no message_start or message_stop, data that is not JSON, an error event): the caller then has no native form.
 */
export function eventsMessage(events: readonly NativeStreamEvent[]): Json | null {
  let message: Json | null = null;
  let content: Json[] = [];
  const inputJson = new Map<number, string>();
  let stopped = false;
  for (const item of events) {
    const data = eventData(item);
    if (data === null) return null;
    const type = data.type;
    if (type === 'error') return null;
    if (type === 'message_start') {
      if (message !== null || !isRecord(data.message)) return null;
      message = { ...data.message };
      content = [];
      message.content = content;
      message.usage = isRecord(message.usage) ? { ...message.usage } : {};
      continue;
    }
    if (message === null) continue;
    const index = typeof data.index === 'number' ? data.index : -1;
    switch (type) {
      case 'content_block_start':
        if (!isRecord(data.content_block)) return null;
        content.push({ ...data.content_block });
        break;
      case 'content_block_delta': {
        const block = content[index];
        const delta = data.delta;
        if (!block || !isRecord(delta)) break;
        if (delta.type === 'text_delta' && block.type === 'text') block.text = `${(block.text as string | undefined) ?? ''}${String(delta.text ?? '')}`;
        else if (delta.type === 'citations_delta' && block.type === 'text') block.citations = [...(Array.isArray(block.citations) ? block.citations : []), delta.citation];
        else if (delta.type === 'thinking_delta' && block.type === 'thinking') block.thinking = `${(block.thinking as string | undefined) ?? ''}${String(delta.thinking ?? '')}`;
        else if (delta.type === 'signature_delta' && block.type === 'thinking') block.signature = delta.signature;
        else if (delta.type === 'input_json_delta' && TOOL_INPUT_BLOCKS.has(block.type as string)) inputJson.set(index, (inputJson.get(index) ?? '') + String(delta.partial_json ?? ''));
        break;
      }
      case 'content_block_stop': {
        const json = inputJson.get(index);
        const block = content[index];
        if (json !== undefined && block) {
          try {
            block.input = json === '' ? {} : JSON.parse(json);
          } catch {
            return null;
          }
          inputJson.delete(index);
        }
        break;
      }
      case 'message_delta': {
        const delta = isRecord(data.delta) ? data.delta : {};
        message.stop_reason = delta.stop_reason ?? null;
        message.stop_sequence = delta.stop_sequence ?? null;
        if (delta.stop_details !== undefined) message.stop_details = delta.stop_details;
        if (delta.container !== undefined && delta.container !== null) message.container = delta.container;
        const usage = message.usage as Json;
        if (isRecord(data.usage)) {
          if (data.usage.output_tokens !== undefined) usage.output_tokens = data.usage.output_tokens;
          for (const name of TOTALS) if (data.usage[name] !== undefined && data.usage[name] !== null) usage[name] = data.usage[name];
        }
        break;
      }
      case 'message_stop':
        stopped = true;
        break;
    }
  }
  return stopped && inputJson.size === 0 ? message : null;
}
