/** The parts of Anthropic's Messages API the inbound dialect reads and writes (what Anthropic SDK clients send). */

export type Json = Record<string, unknown>;

export interface AnthropicUsageOut {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

export type StopReason = 'end_turn' | 'max_tokens' | 'stop_sequence' | 'tool_use' | 'refusal';

export interface AnthropicMessageOut {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Json[];
  stop_reason: StopReason | null;
  stop_sequence: string | null;
  usage: AnthropicUsageOut;
}

/** One server-sent event of Anthropic's stream: the `event:` name and its JSON `data` (which repeats the name as `type`). */
export interface AnthropicStreamEvent {
  event: string;
  data: Json;
}
