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
