/**
 * The canonical shapes are OpenAI's chat-completions shapes. Only the fields the gateway reads are typed;
 * everything else rides along untouched so new OpenAI fields pass through without a release.
 */
export interface ChatMessage {
  role: string;
  content?: unknown;
  [field: string]: unknown;
}

export interface ChatCompletionRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean; [field: string]: unknown } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  [field: string]: unknown;
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [field: string]: unknown;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  model: string;
  choices: unknown[];
  usage?: CompletionUsage | null;
  [field: string]: unknown;
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  model: string;
  choices: unknown[];
  usage?: CompletionUsage | null;
  [field: string]: unknown;
}

/**
 * What flows back through the pipeline. A non-streaming answer is one `completion`; a streaming answer is
 * many `chunk`s. Stages on the response side map over this stream, so they treat both alike.
 */
export type ResponseEvent =
  | { kind: 'completion'; completion: ChatCompletion }
  | { kind: 'chunk'; chunk: ChatCompletionChunk }
  | { kind: 'embeddings'; response: EmbeddingsResponse };

/** OpenAI's embeddings request: `input` is a string, strings, a token array or token arrays. */
export interface EmbeddingsRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  [field: string]: unknown;
}

export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
