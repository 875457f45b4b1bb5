import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import { withDerivedEffort } from '../../core/derived-effort.js';
import type { Target } from '../../core/provider.js';
import { isRecord } from '../../core/is-record.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { assistantContent, systemContent, userContent } from './messages.js';
import { textDocumentsFor } from '../text-documents.js';

/**
 * Wire formats whose adapters read Anthropic's own request fields off the canonical request: Anthropic's (when it
 * is not sent the client's own body) and Vertex AI's (its Claude models) read `thinking` and `cache_control`;
 * Bedrock's reads `thinking` (for its Claude models, so the client's exact budget reaches them).
 */
const READS_THINKING = new Set(['anthropic', 'vertex', 'bedrock']);
const READS_CACHE_CONTROL = new Set(['anthropic', 'vertex']);
/**
 * Formats whose adapters send `top_k` on: Anthropic's and Vertex AI's Claude as top_k, Gemini's (and Vertex AI's)
 * as generationConfig.topK, Bedrock's to Claude in additionalModelRequestFields. OpenAI's API refuses the field.
 */
const READS_TOP_K = new Set(['anthropic', 'vertex', 'gemini', 'bedrock']);

function marked(part: unknown): boolean {
  return isRecord(part) && part.cache_control !== undefined;
}

function unmarked(part: Json): Json {
  const { cache_control: _, ...rest } = part;
  return rest;
}

/** A message without its parts' markers, its text joined back into a string as the dialect's read would have. */
function unmarkedMessage(message: ChatMessage): ChatMessage {
  if (!Array.isArray(message.content) || !message.content.some(marked)) return message;
  const parts = (message.content as Json[]).map(unmarked);
  if (message.role === 'system') return { ...message, content: systemContent(parts) };
  if (message.role === 'user') return { ...message, content: userContent(parts) };
  if (message.role === 'assistant') return { ...message, content: assistantContent(parts, Array.isArray(message.tool_calls) && message.tool_calls.length > 0) };
  return { ...message, content: parts };
}

/**
 * The canonical request of an Anthropic client as an attempt on an upstream of `format` gets it. The dialect's
 * read keeps `thinking`, `cache_control` and `top_k` on it for the adapters that read them; a format that does not read
 * one gets the request without it (OpenAI's API refuses both with a 400; the thinking budget travels as
 * reasoning_effort), as a direct request to that format always did. Asked per attempt, so a route or a fallback
 * chain mixing formats sends each target what it takes: the Anthropic attempt the client's body, the OpenAI
 * fallback no markers. The reasoning_effort the thinking budget became is sent as the target's model takes it.
 */
export function anthropicRequestFor(request: ChatCompletionRequest, format: string, target?: Target): ChatCompletionRequest {
  return withReasoningHistory(withDerivedEffort(textDocumentsFor(shapedFor(request, format), format), target), target);
}

function hasToolCalls(message: ChatMessage): boolean {
  return Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
}

/**
 * The earlier turns' reasoning (their thinking blocks' text, see messages.ts) as the target takes it. A vendor that
 * wants it back (reasoningInHistory: DeepSeek's and Kimi's thinking modes refuse a tool-call turn without it) gets it
 * on every assistant turn that has it, and an empty one (the vendor's emptyReasoning) on a tool-call turn that had no
 * thinking block; every other target gets no `reasoning_content` at all (OpenAI's API and stricter vendors refuse
 * fields they do not know).
 */
function withReasoningHistory(request: ChatCompletionRequest, target: Target | undefined): ChatCompletionRequest {
  const quirks = target?.provider.vendor.quirks;
  const models = quirks?.reasoningInHistory;
  const wanted = models === true || (Array.isArray(models) && target !== undefined && models.some((prefix: string) => target.model.startsWith(prefix)));
  const empty = quirks?.emptyReasoning ?? '';
  // An empty thinking block's text is no reasoning either, to a vendor that takes an empty one as missing.
  const lacksReasoning = (message: ChatMessage): boolean =>
    typeof message.reasoning_content !== 'string' || (message.reasoning_content === '' && empty !== '');
  const changes = (message: ChatMessage): boolean =>
    message.role === 'assistant' && (wanted ? hasToolCalls(message) && lacksReasoning(message) : message.reasoning_content !== undefined);
  if (!request.messages.some(changes)) return request;
  const messages = request.messages.map((message) => {
    if (!changes(message)) return message;
    if (wanted) return { ...message, reasoning_content: empty };
    const { reasoning_content: _left, ...rest } = message;
    return rest as ChatMessage;
  });
  return { ...request, messages };
}

function shapedFor(request: ChatCompletionRequest, format: string): ChatCompletionRequest {
  const keepCache = READS_CACHE_CONTROL.has(format);
  const tools = !keepCache && Array.isArray(request.tools) && request.tools.some(marked) ? (request.tools as Json[]).map(unmarked) : request.tools;
  const messages = !keepCache && request.messages.some((message) => Array.isArray(message.content) && message.content.some(marked)) ? request.messages.map(unmarkedMessage) : request.messages;
  const dropThinking = request.thinking !== undefined && !READS_THINKING.has(format);
  const dropTopK = request.top_k !== undefined && !READS_TOP_K.has(format);
  if (!dropThinking && !dropTopK && tools === request.tools && messages === request.messages) return request;
  const out: ChatCompletionRequest = { ...request, messages };
  if (dropThinking) delete out.thinking;
  if (dropTopK) delete out.top_k;
  if (tools !== undefined) out.tools = tools;
  return out;
}
