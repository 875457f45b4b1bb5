import type { StopReason } from './shapes.js';

/** Anthropic's stop_reason and OpenAI's finish_reason, both ways, side by side so the two stay each other's inverse. */

/** Anthropic's stop_reason as OpenAI's finish_reason. */
export function finishReasonOf(stopReason: unknown): string {
  switch (stopReason) {
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      // end_turn, stop_sequence, and pause_turn (a server tool paused a long turn; the answer so far is whole).
      return 'stop';
  }
}

/**
 * The stop sequence that ended an answer, when the canonical choice tells: vLLM-style servers name it in the
 * choice's `stop_reason`, and a `stop_sequence` field is read too. OpenAI's own shape only says `stop`, which
 * cannot tell a stop sequence from a natural end, so then there is none. Vendors that say a stop sequence ended the
 * answer without saying which (Bedrock Converse's `stop_sequence`, Cohere's `STOP_SEQUENCE`) have their adapter mark
 * the choice `stopped_at_stop_sequence: true`: with one sequence asked for, that is the one.
 */
export function matchedStopSequence(choice: Record<string, unknown>, requested: readonly string[]): string | null {
  for (const field of ['stop_sequence', 'stop_reason']) {
    const value = choice[field];
    if (typeof value === 'string' && requested.includes(value)) return value;
  }
  if (choice.stopped_at_stop_sequence === true && requested.length === 1) return requested[0] ?? null;
  return null;
}

/** OpenAI's finish_reason as Anthropic's stop_reason. */
export function stopReasonOf(finishReason: unknown, stopSequence: string | null): StopReason {
  switch (finishReason) {
    case 'length':
      return 'max_tokens';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'content_filter':
      return 'refusal';
    default:
      return stopSequence === null ? 'end_turn' : 'stop_sequence';
  }
}
