/**
 * Anthropic's Messages API wire format, as both sides of tollgate meet it: the /anthropic dialect reads requests
 * and writes answers in it, the anthropic provider adapter writes requests and reads answers in it. One set of
 * types for both (the `...Out` shapes are what tollgate writes, exactly; the others what it reads, loosely).
 */

export type Json = Record<string, unknown>;

export interface AnthropicUsageOut {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** Only when the upstream split its cache writes by lifetime. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  /** Only when the upstream ran searches it bills per search. */
  server_tool_use?: { web_search_requests: number };
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

export type AnthropicBlock = Record<string, unknown> & { type: string };

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicBlock[];
}

export interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  [field: string]: unknown;
}

export interface AnthropicResponseBlock {
  type: string;
  text?: string;
  thinking?: string;
  id?: string;
  name?: string;
  input?: unknown;
  [field: string]: unknown;
}

export interface AnthropicMessageResponse {
  id: string;
  type: 'message';
  role: 'assistant';
  model?: string;
  content: AnthropicResponseBlock[];
  stop_reason?: string | null;
  stop_sequence?: string | null;
  usage?: AnthropicUsage;
}
