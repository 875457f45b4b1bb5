import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { type Json } from '../../wire/anthropic/shapes.js';
import { assistantContent, systemContent, userContent } from './messages.js';

/**
 * Wire formats whose adapters read Anthropic's own request fields (`thinking`, `cache_control`) off the canonical
 * request: Anthropic's (when it is not sent the client's own body) and Vertex AI's (its Claude models).
 */
const ANTHROPIC_AWARE = new Set(['anthropic', 'vertex']);

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
 * read keeps `thinking` and `cache_control` on it for the adapters that read them; any other format gets it
 * without them (OpenAI's API refuses both with a 400; the thinking budget travels as reasoning_effort), as a
 * direct request to that format always did. Asked per attempt, so a route or a fallback chain mixing formats
 * sends each target what it takes: the Anthropic attempt the client's body, the OpenAI fallback no markers.
 */
export function anthropicRequestFor(request: ChatCompletionRequest, format: string): ChatCompletionRequest {
  if (ANTHROPIC_AWARE.has(format)) return request;
  const tools = Array.isArray(request.tools) && request.tools.some(marked) ? (request.tools as Json[]).map(unmarked) : request.tools;
  const messages = request.messages.some((message) => Array.isArray(message.content) && message.content.some(marked)) ? request.messages.map(unmarkedMessage) : request.messages;
  if (request.thinking === undefined && tools === request.tools && messages === request.messages) return request;
  const { thinking: _, ...rest } = request;
  return tools === undefined ? { ...rest, messages } : { ...rest, messages, tools };
}
