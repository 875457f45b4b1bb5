import type { ChatCompletionChunk } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { finishReasonOf } from './to-completion.js';
import { completionUsageOf } from './usage.js';

/** The events that end a Responses stream with an answer (`response.failed` and `error` end it without one). */
export const FINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete']);

/**
 * Reads a Responses API stream's events (parsed) into canonical chunks, for the stages (guardrails, cost, the cache,
 * the request log) while the client gets the events themselves: text and refusal deltas, reasoning summary deltas,
 * each function_call item as a tool call (numbered in the order they come) with its argument deltas, and at the end
 * the finish reason and a usage chunk from the final Response. Events without canonical meaning make no chunk.
 */
export class ResponsesChunker {
  private id = '';
  private created = Math.floor(Date.now() / 1000);
  private model = '';
  /** Tool call index by output_index. */
  private readonly tools = new Map<number, number>();
  /** Whether the final event came (the stream ended properly). */
  finished = false;

  push(event: Record<string, unknown>): ChatCompletionChunk[] {
    const type = event.type;
    if (type === 'response.created' && isRecord(event.response)) {
      const response = event.response;
      if (typeof response.id === 'string') this.id = response.id;
      if (typeof response.created_at === 'number') this.created = Math.floor(response.created_at);
      if (typeof response.model === 'string') this.model = response.model;
      return [];
    }
    if (type === 'response.output_text.delta' && typeof event.delta === 'string') return [this.chunk({ content: event.delta })];
    if (type === 'response.refusal.delta' && typeof event.delta === 'string') return [this.chunk({ refusal: event.delta })];
    if (type === 'response.reasoning_summary_text.delta' && typeof event.delta === 'string') return [this.chunk({ reasoning_content: event.delta })];
    if (type === 'response.output_item.added' && isRecord(event.item) && event.item.type === 'function_call') {
      const item = event.item;
      const index = this.tools.size;
      this.tools.set(Number(event.output_index), index);
      const args = typeof item.arguments === 'string' ? item.arguments : '';
      return [this.chunk({ tool_calls: [{ index, id: item.call_id, type: 'function', function: { name: item.name, arguments: args } }] })];
    }
    if (type === 'response.function_call_arguments.delta' && typeof event.delta === 'string') {
      const index = this.tools.get(Number(event.output_index));
      return index === undefined ? [] : [this.chunk({ tool_calls: [{ index, function: { arguments: event.delta } }] })];
    }
    if (typeof type === 'string' && FINAL_EVENTS.has(type) && isRecord(event.response)) {
      this.finished = true;
      const response = event.response;
      const finish = this.chunk({}, finishReasonOf(response, this.tools.size > 0));
      const usage = completionUsageOf(response.usage);
      return usage ? [finish, { ...this.chunk({}), choices: [], usage }] : [finish];
    }
    return [];
  }

  private chunk(delta: Record<string, unknown>, finishReason: string | null = null): ChatCompletionChunk {
    return { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }] };
  }
}
