import { isNumberValue } from '../../exact-numbers.js';
import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput, quoteValue } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';
import { refuseSingleToolCall } from '../single-tool-call.js';
import { cohereLogprobs } from './logprobs.js';

/**
 * Canonical (OpenAI) request -> Cohere Chat API v2 request. Cohere's v2 shapes are close to OpenAI's: roles,
 * image_url parts, function tools and tool_call_id all carry over; the differences are the sampling names
 * (`p`, `stop_sequences`), the upper-case tool_choice, the JSON schema form, and the assistant's `tool_plan`.
 */

type Json = Record<string, unknown>;

function unsupported(message: string, param: string | null): GatewayError {
  return gatewayError('unsupported_parameter', `cohere: ${message}`, { param: param });
}

/** The text of string or text-part content; other parts are refused so nothing is lost unnoticed. */
function textOf(content: unknown, param: string): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw unsupported(`message content must be a string or an array of parts`, param);
  const texts: string[] = [];
  content.forEach((part: unknown, i) => {
    if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
    // A refusal the client echoes back is the assistant's text as far as the next turn is concerned.
    else if (isRecord(part) && part.type === 'refusal' && typeof part.refusal === 'string') texts.push(part.refusal);
    else throw unsupported(`only text parts are supported here (got ${isRecord(part) ? quoteValue(part.type) : typeof part})`, `${param}[${i}]`);
  });
  return texts.join('');
}

function userContent(content: unknown, param: string): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw unsupported('user message content must be a string or an array of parts', param);
  return content.map((part: unknown, i) => {
    if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') return { type: 'text', text: part.text };
    if (isRecord(part) && part.type === 'image_url') {
      const image = isRecord(part.image_url) ? part.image_url : {};
      if (typeof image.url !== 'string') throw unsupported('an image_url part needs image_url.url', `${param}[${i}]`);
      return { type: 'image_url', image_url: { url: image.url, ...(typeof image.detail === 'string' ? { detail: image.detail } : {}) } };
    }
    if (isRecord(part) && part.type === 'file') throw unsupported(fileRefusal(part), `${param}[${i}]`);
    throw unsupported(`content parts of type '${isRecord(part) ? quoteValue(part.type) : typeof part}' are not supported`, `${param}[${i}]`);
  });
}

/**
 * Why a file part cannot go: Cohere's v2 Chat API takes documents only as text fields (its `documents` field and
 * `document` content, https://docs.cohere.com/docs/rag-quickstart), never a file's bytes, and
 * reading a PDF's text is not the gateway's job.
 */
function fileRefusal(part: Json): string {
  const data = isRecord(part.file) ? part.file.file_data : undefined;
  const type = typeof data === 'string' ? /^data:([^;,]+)/.exec(data)?.[1] : undefined;
  const what = type ? `a file of type ${quoteInput(type.toLowerCase())}` : 'a file';
  return `${what} cannot be sent: Cohere's Chat API takes documents only as text, not files. Send the document's text as a text part, or use a provider that reads PDFs (Anthropic, OpenAI, Gemini, Vertex AI, Bedrock).`;
}

function toolCalls(calls: unknown, param: string): Json[] {
  if (!Array.isArray(calls)) throw unsupported('tool_calls must be an array', param);
  return calls.map((call: unknown, i) => {
    const fn = isRecord(call) && isRecord(call.function) ? call.function : null;
    if (!isRecord(call) || !fn || typeof fn.name !== 'string') throw unsupported('a tool call needs function.name', `${param}[${i}]`);
    return {
      id: call.id,
      type: 'function',
      function: { name: fn.name, arguments: typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {}) },
    };
  });
}

function message(msg: ChatMessage, i: number): Json {
  const param = `messages[${i}].content`;
  switch (msg.role) {
    case 'system':
    case 'developer':
      return { role: 'system', content: textOf(msg.content, param) };
    case 'user':
      return { role: 'user', content: userContent(msg.content, param) };
    case 'assistant': {
      const text = textOf(msg.content, param);
      if (Array.isArray(msg.tool_calls) && msg.tool_calls.length > 0) {
        // Cohere keeps the text that accompanies tool calls as the call's plan, not as content.
        return { role: 'assistant', tool_calls: toolCalls(msg.tool_calls, `messages[${i}].tool_calls`), ...(text ? { tool_plan: text } : {}) };
      }
      return { role: 'assistant', content: text };
    }
    case 'tool':
      if (typeof msg.tool_call_id !== 'string') throw unsupported('a tool message needs tool_call_id', `messages[${i}].tool_call_id`);
      return { role: 'tool', tool_call_id: msg.tool_call_id, content: textOf(msg.content, param) };
    default:
      throw unsupported(`messages with role '${quoteInput(String(msg.role))}' are not supported`, `messages[${i}].role`);
  }
}

function tools(list: unknown): { tools: Json[]; strict: boolean } {
  if (!Array.isArray(list)) throw unsupported('tools must be an array', 'tools');
  let strict = false;
  const mapped = list.map((tool: unknown, i) => {
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function) || typeof tool.function.name !== 'string') {
      throw unsupported('only function tools are supported', `tools[${i}]`);
    }
    const fn = tool.function;
    if (fn.strict === true) strict = true;
    return {
      type: 'function',
      function: {
        name: fn.name,
        ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
        parameters: fn.parameters ?? { type: 'object', properties: {} },
      },
    };
  });
  return { tools: mapped, strict };
}

/** OpenAI tool_choice -> Cohere's; a named function becomes REQUIRED with only that tool offered. */
function applyToolChoice(body: Json, choice: unknown): void {
  if (choice === undefined || choice === null || choice === 'auto') return;
  if (choice === 'none') body.tool_choice = 'NONE';
  else if (choice === 'required') body.tool_choice = 'REQUIRED';
  else if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') {
    const name = choice.function.name;
    const offered = Array.isArray(body.tools) ? (body.tools as Json[]).filter((tool) => (tool.function as Json).name === name) : [];
    if (offered.length === 0) throw unsupported(`tool_choice names '${quoteInput(name)}', which is not in tools`, 'tool_choice');
    body.tools = offered;
    body.tool_choice = 'REQUIRED';
  } else throw unsupported('tool_choice must be none, auto, required or a function', 'tool_choice');
}

function responseFormat(format: unknown): Json | undefined {
  if (!isRecord(format) || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'json_object' };
  if (format.type === 'json_schema') {
    const schema = isRecord(format.json_schema) ? format.json_schema.schema : undefined;
    return schema === undefined ? { type: 'json_object' } : { type: 'json_object', json_schema: schema };
  }
  throw unsupported(`response_format type '${quoteValue(format.type)}' is not supported`, 'response_format');
}

function stopSequences(stop: unknown): string[] | undefined {
  if (typeof stop === 'string') return stop ? [stop] : undefined;
  if (Array.isArray(stop)) return stop.filter((s): s is string => typeof s === 'string' && s !== '');
  return undefined;
}

/**
 * A sampling value in the range Cohere takes (docs.cohere.com/v2/reference/chat: `p` from 0.01 to 0.99, the penalties
 * from 0 to 1); Cohere refuses the whole request for a value outside it. OpenAI's ranges are wider (`top_p` up to 1,
 * which OpenAI's own code samples send, penalties from -2 to 2): the nearest value Cohere takes keeps the intent.
 */
function within(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/**
 * Cohere's refusal of `parallel_tool_calls: false` (see refuseSingleToolCall): its v2 Chat API's tool fields are
 * `tools`, `strict_tools` and `tool_choice` REQUIRED or NONE (docs.cohere.com/reference/chat), no switch for one call.
 */
const SINGLE_TOOL_CALL_REFUSAL = "cohere: parallel_tool_calls: false is not supported: Cohere's Chat API has no setting for one tool call per turn and may answer with several. Leave the field out (or set it true) and handle each call of a turn.";

export function cohereRequestBody(request: ChatCompletionRequest, model: string): Json {
  if (typeof request.n === 'number' && request.n > 1) throw unsupported('n > 1 is not supported; Cohere returns one answer per request', 'n');
  refuseSingleToolCall(request, SINGLE_TOOL_CALL_REFUSAL);
  const logprobs = cohereLogprobs(request);
  const body: Json = { model, messages: request.messages.map(message), ...logprobs };
  if (request.tools !== undefined && request.tools !== null) {
    const mapped = tools(request.tools);
    if (mapped.tools.length > 0) body.tools = mapped.tools;
    if (mapped.strict) body.strict_tools = true;
  }
  applyToolChoice(body, request.tool_choice);
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (typeof maxTokens === 'number') body.max_tokens = maxTokens;
  const stop = stopSequences(request.stop);
  if (stop && stop.length > 0) body.stop_sequences = stop;
  if (typeof request.top_p === 'number') body.p = within(request.top_p, 0.01, 0.99);
  for (const field of ['temperature', 'seed'] as const) {
    if (isNumberValue(request[field])) body[field] = request[field];
  }
  for (const field of ['frequency_penalty', 'presence_penalty'] as const) {
    const value = request[field];
    // A number kept exact (too many digits for a double) goes as written, for Cohere to judge.
    if (typeof value === 'number') body[field] = within(value, 0, 1);
    else if (isNumberValue(value)) body[field] = value;
  }
  const format = responseFormat(request.response_format);
  if (format) body.response_format = format;
  if (request.stream === true) body.stream = true;
  return body;
}
