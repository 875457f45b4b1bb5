// Validation of a chat completion request the way OpenAI does it, and reduction to the few facts the scripted
// answer depends on. Unknown fields are accepted silently (OpenAI ignores most of them too), but for Anthropic's
// own markers, which OpenAI refuses in its own words: a gateway that lets them through gets the 400 it would get.
import type { RequestProblem } from './openai-errors.js';

export interface ChatRequest {
  readonly model: string;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  readonly n: number;
  readonly stop: readonly string[];
  /** max_completion_tokens, else max_tokens, else null. */
  readonly maxTokens: number | null;
  readonly logprobs: boolean;
  readonly topLogprobs: number;
  /** response_format json_object / json_schema: the answer is `{"echo": ...}` as a JSON string. */
  readonly jsonOutput: boolean;
  /** Set when the answer is a call to this function instead of text. */
  readonly toolName: string | null;
  /** The text the answer echoes: the last tool result if the conversation ends with one, else the last user text. */
  readonly echoSource: string;
  readonly promptTokens: number;
}

export type ParseResult = { ok: true; request: ChatRequest } | { ok: false; problem: RequestProblem };

type Json = Record<string, unknown>;

export function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(message: string, param: string | null, code: string | null = null): ParseResult {
  return { ok: false, problem: { message, param, code } };
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'object' ? 'object' : typeof value;
}

function invalidType(param: string, expected: string, value: unknown): ParseResult {
  return fail(`Invalid type for '${param}': expected ${expected}, but got ${typeName(value)} instead.`, param, 'invalid_type');
}

/** The text of a message's content: a string, or the text parts of a content-part array joined by a space. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (isRecord(part) && part.type === 'text' && typeof part.text === 'string') texts.push(part.text);
  }
  return texts.join(' ');
}

/** Whitespace-separated words; the scripted upstream's stand-in for a tokenizer. */
export function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const space = code === 32 || (code >= 9 && code <= 13) || code === 160 || code === 0x2028 || code === 0x2029;
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/** OpenAI's reasoning models, which take max_completion_tokens only. */
const REASONING_MODEL = /^(o\d|gpt-5)/;

type IntField = { ok: true; value: number | null } | { ok: false; problem: RequestProblem };

function optionalPositiveInt(body: Json, param: string): IntField {
  const value = body[param];
  if (value === undefined || value === null) return { ok: true, value: null };
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    return { ok: false, problem: { message: `Invalid type for '${param}': expected an integer, but got ${typeName(value)} instead.`, param, code: 'invalid_type' } };
  }
  if (value < 1) {
    const message = `Invalid '${param}': integer below minimum value. Expected a value >= 1, but got ${value} instead.`;
    return { ok: false, problem: { message, param, code: 'integer_below_min_value' } };
  }
  return { ok: true, value };
}

function parseStop(stop: unknown): readonly string[] | null {
  if (stop === undefined || stop === null) return [];
  if (typeof stop === 'string') return stop === '' ? [] : [stop];
  if (Array.isArray(stop) && stop.every((s) => typeof s === 'string')) return stop.filter((s) => s !== '');
  return null;
}

/**
 * Which function the model "decides" to call, or null for a text answer: after a user message, after a tool result
 * that asks to be called again ("call me again": a paged search), or whenever tool_choice forces a call
 * (`required`, a named function), as OpenAI does, tool results read or not.
 */
function chooseTool(body: Json, last: Json): string | null {
  const tools = body.tools;
  const choice = body.tool_choice;
  const forced = choice === 'required' || (isRecord(choice) && isRecord(choice.function));
  const again = last.role === 'tool' && /call me again/i.test(contentText(last.content));
  if (!Array.isArray(tools) || tools.length === 0 || (last.role !== 'user' && !forced && !again)) return null;
  if (choice === 'none') return null;
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') return choice.function.name;
  const first: unknown = tools[0];
  if (isRecord(first) && isRecord(first.function) && typeof first.function.name === 'string') return first.function.name;
  return null;
}

/** A function tool whose parameters OpenAI refuses at the top level, in OpenAI's words (a 400 for the whole request). */
function functionParametersProblem(tools: unknown): RequestProblem | null {
  if (!Array.isArray(tools)) return null;
  for (let i = 0; i < tools.length; i++) {
    const fn: unknown = isRecord(tools[i]) ? (tools[i] as Json).function : undefined;
    if (!isRecord(fn) || !isRecord(fn.parameters)) continue;
    const parameters = fn.parameters;
    if ((parameters.type === undefined || parameters.type === 'object') && !['oneOf', 'anyOf', 'allOf', 'enum', 'not'].some((key) => parameters[key] !== undefined)) continue;
    return {
      message: `Invalid schema for function '${String(fn.name)}': schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level.`,
      param: `tools[${i}].function.parameters`,
      code: 'invalid_function_parameters',
    };
  }
  return null;
}

/**
 * Anthropic's request fields OpenAI refuses: `thinking` at the top level ("Unrecognized request argument"), and
 * `cache_control` on a content part or a tool ("Unknown parameter"), with the words and params OpenAI uses.
 */
function anthropicMarker(body: Json): RequestProblem | null {
  if (body.thinking !== undefined) return { message: 'Unrecognized request argument supplied: thinking', param: null, code: null };
  const unknown = (param: string): RequestProblem => ({ message: `Unknown parameter: '${param}'.`, param, code: 'unknown_parameter' });
  const messages = Array.isArray(body.messages) ? body.messages : [];
  for (let i = 0; i < messages.length; i++) {
    const content: unknown = isRecord(messages[i]) ? (messages[i] as Json).content : undefined;
    if (!Array.isArray(content)) continue;
    const at = content.findIndex((part) => isRecord(part) && part.cache_control !== undefined);
    if (at !== -1) return unknown(`messages[${i}].content[${at}].cache_control`);
  }
  const tools = Array.isArray(body.tools) ? body.tools : [];
  const tool = tools.findIndex((entry) => isRecord(entry) && entry.cache_control !== undefined);
  return tool === -1 ? null : unknown(`tools[${tool}].cache_control`);
}

/**
 * A `file` part whose data is not a PDF: Chat Completions takes only PDFs as files (a text file's contents go as a
 * text part, https://developers.openai.com/api/docs/guides/file-inputs), and refuses any other type in these words.
 */
function nonPdfFile(messages: Json[]): RequestProblem | null {
  for (let i = 0; i < messages.length; i++) {
    const content = messages[i]?.content;
    if (!Array.isArray(content)) continue;
    for (let j = 0; j < content.length; j++) {
      const part: unknown = content[j];
      if (!isRecord(part) || part.type !== 'file' || !isRecord(part.file) || typeof part.file.file_data !== 'string') continue;
      const mime = /^data:([^;,]*)/.exec(part.file.file_data)?.[1] ?? '';
      if (mime === 'application/pdf') continue;
      const param = `messages[${i}].content[${j}].file.file_data`;
      const message = `Invalid file data: '${param}'. Expected a base64-encoded data URL with an application/pdf MIME type (e.g. 'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got unsupported MIME type '${mime}'.`;
      return { message, param, code: 'invalid_value' };
    }
  }
  return null;
}

function checkMessages(messages: unknown): RequestProblem | null {
  if (messages === undefined) return { message: "Missing required parameter: 'messages'.", param: 'messages', code: 'missing_required_parameter' };
  if (!Array.isArray(messages)) {
    return { message: `Invalid type for 'messages': expected an array, but got ${typeName(messages)} instead.`, param: 'messages', code: 'invalid_type' };
  }
  if (messages.length === 0) {
    return {
      message: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      param: 'messages',
      code: 'empty_array',
    };
  }
  for (let i = 0; i < messages.length; i++) {
    const message: unknown = messages[i];
    if (!isRecord(message) || typeof message.role !== 'string') {
      return { message: `Missing required parameter: 'messages[${i}].role'.`, param: `messages[${i}].role`, code: 'missing_required_parameter' };
    }
  }
  return null;
}

export function parseChatRequest(body: unknown): ParseResult {
  if (!isRecord(body)) return fail(`Invalid type for request body: expected an object, but got ${typeName(body)} instead.`, null, 'invalid_type');

  const model = body.model;
  if (model === undefined || model === null || model === '') return fail("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  if (typeof model !== 'string') return invalidType('model', 'a string', model);

  const messagesProblem = checkMessages(body.messages);
  if (messagesProblem) return { ok: false, problem: messagesProblem };
  const messages = body.messages as Json[];
  const marker = anthropicMarker(body);
  if (marker) return { ok: false, problem: marker };
  const file = nonPdfFile(messages);
  if (file) return { ok: false, problem: file };

  const stream = body.stream === true;
  if (body.stream_options !== undefined && body.stream_options !== null && !stream) {
    return fail("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options');
  }
  const includeUsage = stream && isRecord(body.stream_options) && body.stream_options.include_usage === true;

  const n = body.n ?? 1;
  if (typeof n !== 'number' || !Number.isInteger(n)) return invalidType('n', 'an integer', n);
  if (n < 1 || n > 128) return fail(`Invalid 'n': integer out of range. Expected a value between 1 and 128, but got ${n} instead.`, 'n', 'integer_out_of_range');

  const stop = parseStop(body.stop);
  if (stop === null) return invalidType('stop', 'a string or an array of strings', body.stop);

  const maxCompletion = optionalPositiveInt(body, 'max_completion_tokens');
  if (!maxCompletion.ok) return maxCompletion;
  const maxTokens = optionalPositiveInt(body, 'max_tokens');
  if (!maxTokens.ok) return maxTokens;
  // OpenAI's reasoning models (o-series, gpt-5) refuse the deprecated max_tokens, in these words.
  if (maxTokens.value !== null && REASONING_MODEL.test(model)) {
    return fail("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", 'max_tokens', 'unsupported_parameter');
  }

  const topLogprobs = body.top_logprobs ?? 0;
  if (typeof topLogprobs !== 'number' || !Number.isInteger(topLogprobs) || topLogprobs < 0 || topLogprobs > 20) {
    return fail(`Invalid 'top_logprobs': expected an integer between 0 and 20.`, 'top_logprobs', 'invalid_value');
  }

  const format = isRecord(body.response_format) ? body.response_format.type : undefined;
  // Structured outputs take only an object at the root, as function parameters do, and OpenAI says so.
  const jsonSchema = isRecord(body.response_format) && isRecord(body.response_format.json_schema) ? body.response_format.json_schema : null;
  if (format === 'json_schema' && jsonSchema && isRecord(jsonSchema.schema) && jsonSchema.schema.type !== 'object') {
    const name = typeof jsonSchema.name === 'string' ? jsonSchema.name : '';
    return fail(`Invalid schema for response_format '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${String(jsonSchema.schema.type)}"'.`, 'response_format', null);
  }
  const parameters = functionParametersProblem(body.tools);
  if (parameters) return { ok: false, problem: parameters };
  const last = messages[messages.length - 1] as Json;
  const lastRole = last.role as string;
  let lastUserText = '';
  let promptTokens = 0;
  for (const message of messages) {
    const text = contentText(message.content);
    promptTokens += countWords(text) + 3;
    if (message.role === 'user') lastUserText = text;
  }

  return {
    ok: true,
    request: {
      model,
      stream,
      includeUsage,
      n,
      stop,
      maxTokens: maxCompletion.value ?? maxTokens.value,
      logprobs: body.logprobs === true,
      topLogprobs,
      jsonOutput: format === 'json_object' || format === 'json_schema',
      toolName: chooseTool(body, last),
      echoSource: lastRole === 'tool' ? contentText(last.content) : lastUserText,
      promptTokens,
    },
  };
}
