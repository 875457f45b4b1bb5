import type { GatewayError } from './errors.js';
import type { Target } from './provider.js';

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
 * The client's own request body, kept beside the canonical request when the client's dialect speaks a wire
 * format an upstream may also speak (`anthropic`). An attempt on an upstream of that format sends this body
 * (only the model changed) instead of translating the canonical request: native pass-through.
 */
export interface NativeRequest {
  format: string;
  body: Record<string, unknown>;
  /**
   * Why the canonical request is incomplete, when the dialect left out what it cannot express (e.g. Anthropic's
   * server tools): an attempt on an upstream of another format fails with this error instead of translating.
   */
  untranslatable?: GatewayError | null;
  /**
   * The canonical request as an attempt on an upstream of `format` is to get it, when the dialect left fields on it
   * that only some formats read (Anthropic's `thinking` and `cache_control`, which Vertex AI's Claude reads and
   * OpenAI's API refuses). Asked per attempt, so each target of a route or a fallback chain gets its own shape;
   * `target` lets it leave out what the dialect derived and the target's model refuses (see withDerivedEffort).
   */
  requestFor?: (request: ChatCompletionRequest, format: string, target: Target) => ChatCompletionRequest;
  /**
   * Set when a plugin changed the canonical request and left `body` as the client sent it (a plugin that knows
   * only `ctx.request`): `body` no longer says what the request asks, so attempts translate the canonical request
   * (the change reaches the upstream) and the cache keys the request alone.
   */
  outdated?: boolean;
  /**
   * The API version the client addressed, when its format has several (Gemini's `v1beta`, `v1`, `v1alpha`, which
   * take different fields): the body is written for that version, so an upstream whose base URL names a version
   * is called on this one.
   */
  apiVersion?: string;
  /**
   * The beta opt-ins the client named beside its body (Anthropic's `anthropic-beta` header), for an upstream that
   * takes them in the body instead (Claude on Bedrock: `anthropic_beta`); those that read the header get it forwarded.
   */
  betas?: readonly string[];
  /**
   * The provider (and its configured key, by id) that keeps state the body names (a previous_response_id OpenAI
   * kept): only that provider's targets can take the request, and of its keys that one while it is configured.
   */
  pinned?: { provider: string; keyId: string | null } | null;
}

/** One upstream stream event as it came: the SSE `event:` name and the `data:` text, unparsed. */
export interface NativeStreamEvent {
  event: string;
  data: string;
}

/**
 * The upstream's own answer behind a canonical event, in native pass-through: the whole message (`body`) or the
 * stream events (`events`) decoded together with this chunk and the chunks after it that carry none, including
 * those without canonical meaning (pings, block stops, signatures); in OpenAI's format, where one event is one
 * chunk, each chunk carries its own event's data as `text`. The dialect of the same `format` writes them verbatim (but for the
 * model name); every other reader ignores them. A stage that rewrites the canonical answer must drop `native`
 * from every event it changes (the built-in ones emit new events without it), so the client is served what the
 * stage made rather than the upstream's bytes.
 */
export interface NativeAnswer {
  format: string;
  body?: Record<string, unknown>;
  /**
   * The answer's text as the upstream wrote it: in OpenAI's format the whole message, or in a stream this chunk's own
   * event data; in Anthropic's and Gemini's, the whole message `body` was parsed from (the dialect writes it with the
   * model changed, so numbers keep the digits the upstream wrote).
   */
  text?: string;
  events?: NativeStreamEvent[];
}

/**
 * What flows back through the pipeline. A non-streaming answer is one `completion`; a streaming answer is
 * many `chunk`s. Stages on the response side map over this stream, so they treat both alike.
 */
export type ResponseEvent =
  | { kind: 'completion'; completion: ChatCompletion; native?: NativeAnswer }
  | { kind: 'chunk'; chunk: ChatCompletionChunk; native?: NativeAnswer }
  | { kind: 'embeddings'; response: EmbeddingsResponse; native?: NativeAnswer };

/**
 * What a request asks for. Each operation has its own canonical request shape (the request context is a union
 * discriminated by it); images, audio and rerank are the ones to come. OpenAI's Responses API is a chat: its route
 * reads the body into the chat request and keeps the body itself for providers that serve that API (NativeRequest).
 */
export type Operation = 'chat' | 'embeddings';

/** OpenAI's embeddings request: `input` is a string, strings, a token array or token arrays. */
export interface EmbeddingsRequest {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
  [field: string]: unknown;
}

/** The texts of an embeddings input, and how many tokens its token arrays hold (they have no text). */
export function embeddingInputs(request: EmbeddingsRequest): { texts: string[]; tokens: number } {
  const { input } = request;
  if (typeof input === 'string') return { texts: [input], tokens: 0 };
  const texts: string[] = [];
  let tokens = 0;
  for (const item of input as unknown[]) {
    if (typeof item === 'string') texts.push(item);
    else if (typeof item === 'number') tokens++;
    else if (Array.isArray(item)) tokens += item.length;
  }
  return { texts, tokens };
}

export interface EmbeddingsResponse {
  object: 'list';
  data: Array<{ object: 'embedding'; index: number; embedding: number[] | string }>;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}
