import type { ChatCompletion } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { completionUsageOf } from './usage.js';

/** The chat finish reason a Response's status stands for (`incomplete` with its reason, or tool calls made). */
export function finishReasonOf(response: Record<string, unknown>, calledTools: boolean): string {
  if (response.status === 'incomplete') {
    const details = isRecord(response.incomplete_details) ? response.incomplete_details : {};
    return details.reason === 'content_filter' ? 'content_filter' : 'length';
  }
  return calledTools ? 'tool_calls' : 'stop';
}

/** The text of a reasoning item's summary parts (what a client may be shown of the model's reasoning). */
function summaryText(item: Record<string, unknown>): string {
  if (!Array.isArray(item.summary)) return '';
  return item.summary.map((part: unknown) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

/**
 * A Responses API answer (a `Response` object) as the canonical chat completion the stages read (guardrails, the
 * cache, cost, the request log): its messages' output_text as the content, refusals as the refusal, function_call
 * items as tool calls (by their call_id), reasoning summaries as reasoning_content, its usage. Other items (built-in
 * tools' calls, reasoning's encrypted content) have no canonical counterpart: the client gets them in the upstream's
 * own answer (native pass-through).
 */
export function completionOfResponse(response: Record<string, unknown>): ChatCompletion {
  let text = '';
  let refusal = '';
  let reasoning = '';
  const toolCalls: Array<Record<string, unknown>> = [];
  for (const item of Array.isArray(response.output) ? response.output : []) {
    if (!isRecord(item)) continue;
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (!isRecord(part)) continue;
        if (part.type === 'output_text' && typeof part.text === 'string') text += part.text;
        else if (part.type === 'refusal' && typeof part.refusal === 'string') refusal += part.refusal;
      }
    } else if (item.type === 'function_call') {
      toolCalls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '' } });
    } else if (item.type === 'reasoning') {
      reasoning += summaryText(item);
    }
  }
  const message: Record<string, unknown> = { role: 'assistant', content: text === '' && (toolCalls.length > 0 || refusal !== '') ? null : text };
  if (refusal !== '') message.refusal = refusal;
  if (reasoning !== '') message.reasoning_content = reasoning;
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: typeof response.id === 'string' ? response.id : '',
    object: 'chat.completion',
    created: typeof response.created_at === 'number' ? Math.floor(response.created_at) : Math.floor(Date.now() / 1000),
    model: typeof response.model === 'string' ? response.model : '',
    choices: [{ index: 0, message, finish_reason: finishReasonOf(response, toolCalls.length > 0), logprobs: null }],
    usage: completionUsageOf(response.usage),
  };
}
