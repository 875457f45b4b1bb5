import type { ChatCompletion, ChatCompletionChunk } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { withFields } from '../../core/with-fields.js';

/**
 * A whole completion as the chunks a stream of it would have had, for a streaming client whose answer came
 * back whole (a stage answering from a store instead of calling upstream): the stream renderer then serves both.
 */
export function chunksOfCompletion(completion: ChatCompletion): ChatCompletionChunk[] {
  const choice = isRecord(completion.choices[0]) ? completion.choices[0] : {};
  const message = isRecord(choice.message) ? choice.message : {};
  const delta: Record<string, unknown> = { role: 'assistant' };
  for (const field of ['reasoning_content', 'reasoning', 'content'] as const) if (typeof message[field] === 'string') delta[field] = message[field];
  if (Array.isArray(message.tool_calls)) delta.tool_calls = message.tool_calls.map((call: unknown, index) => ({ ...(isRecord(call) ? call : {}), index }));
  const base = { id: completion.id, object: 'chat.completion.chunk' as const, model: completion.model };
  const { finish_reason: finishReason, stop_reason: stopReason, stop_sequence: stopSequence, stopped_at_stop_sequence: stoppedAtSequence } = choice;
  return [
    withFields(base, { choices: [{ index: 0, delta, finish_reason: finishReason ?? 'stop', stop_reason: stopReason, stop_sequence: stopSequence, stopped_at_stop_sequence: stoppedAtSequence }] }),
    withFields(base, { choices: [], usage: completion.usage ?? null }),
  ];
}
