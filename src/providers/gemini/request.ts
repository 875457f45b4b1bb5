import { isNumberValue } from '../../exact-numbers.js';
import type { GatewayError } from '../../core/errors.js';
import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import { toGeminiJsonSchema, toGeminiSchema } from '../../wire/gemini/schema.js';
import { isRecord } from '../../core/is-record.js';
import { quoteInput, quoteValue } from '../../core/quote-input.js';
import { gatewayError } from '../../core/errors.js';
import { refuseSingleToolCall } from '../single-tool-call.js';

/** One Gemini `Part`; exactly one data field is set (text, inlineData, fileData, functionCall, functionResponse). */
export type GeminiPart = Record<string, unknown>;

export interface GeminiContent {
  role: 'user' | 'model';
  parts: GeminiPart[];
}

/**
 * Google's documented stand-in for a thought signature the client did not keep: Gemini 3 rejects a replayed
 * function call without one.
 */
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

function bad(message: string, param: string | null = null): GatewayError {
  return gatewayError('unsupported_for_provider', `gemini: ${message}`, { param: param });
}

const DATA_URL = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s;

/** Guesses the MIME type of a linked file from its extension; Gemini's fileData needs one. */
function mimeFromUrl(url: string): string {
  const path = url.split(/[?#]/)[0]?.toLowerCase() ?? '';
  const ext = path.slice(path.lastIndexOf('.') + 1);
  const known: Record<string, string> = {
    png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', webp: 'image/webp', gif: 'image/gif', heic: 'image/heic',
    heif: 'image/heif', pdf: 'application/pdf', mp3: 'audio/mp3', wav: 'audio/wav', mp4: 'video/mp4',
  };
  return known[ext] ?? 'image/jpeg';
}

function mediaPart(url: string, param: string): GeminiPart {
  const data = DATA_URL.exec(url);
  if (data) return { inlineData: { mimeType: data[1], data: data[2] } };
  if (url.startsWith('data:')) throw bad('only base64 data: URLs are supported.', param);
  return { fileData: { mimeType: mimeFromUrl(url), fileUri: url } };
}

function contentPart(part: unknown, param: string): GeminiPart | null {
  if (!isRecord(part)) throw bad('a content part must be an object.', param);
  switch (part.type) {
    case 'text':
      return typeof part.text === 'string' && part.text !== '' ? { text: part.text } : null;
    case 'refusal':
      // An assistant's refusal sent back in the history is what the model said.
      return typeof part.refusal === 'string' && part.refusal !== '' ? { text: part.refusal } : null;
    case 'image_url': {
      const image = part.image_url;
      const url = typeof image === 'string' ? image : isRecord(image) ? image.url : undefined;
      if (typeof url !== 'string') throw bad('an image_url part needs a url.', param);
      return mediaPart(url, param);
    }
    case 'input_audio': {
      const audio = isRecord(part.input_audio) ? part.input_audio : {};
      if (typeof audio.data !== 'string') throw bad('an input_audio part needs base64 data.', param);
      return { inlineData: { mimeType: `audio/${typeof audio.format === 'string' ? audio.format : 'wav'}`, data: audio.data } };
    }
    case 'file': {
      const file = isRecord(part.file) ? part.file : {};
      if (typeof file.file_data !== 'string') throw bad('a file part needs file_data (uploaded file ids are not supported).', param);
      return mediaPart(file.file_data, param);
    }
    default:
      throw bad(`content parts of type '${quoteValue(part.type)}' are not supported.`, param);
  }
}

function contentParts(content: unknown, param: string): GeminiPart[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) throw bad('message content must be a string or an array of parts.', param);
  return content.flatMap((part: unknown, i: number): GeminiPart[] => {
    const mapped = contentPart(part, `${param}[${i}]`);
    return mapped ? [mapped] : [];
  });
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

function parseArguments(raw: unknown, param: string): Record<string, unknown> {
  if (isRecord(raw)) return raw;
  if (raw === undefined || raw === null || raw === '') return {};
  try {
    const parsed: unknown = JSON.parse(String(raw));
    if (isRecord(parsed)) return parsed;
  } catch {
    // Reported below.
  }
  throw bad('tool call arguments must be a JSON object.', param);
}

/** A function's result must be an object for Gemini; anything else is wrapped as `{result}`. */
function functionResult(content: unknown): Record<string, unknown> {
  const text = textOf(content);
  try {
    const parsed: unknown = JSON.parse(text);
    return isRecord(parsed) ? parsed : { result: parsed };
  } catch {
    return { result: text };
  }
}

function assistantParts(message: ChatMessage, index: number, callNames: Map<string, string>, needsSignature: boolean): GeminiPart[] {
  const parts = contentParts(message.content, `messages[${index}].content`);
  // A structured-output refusal comes back as content null with the words in `refusal`.
  if (parts.length === 0 && typeof message.refusal === 'string' && message.refusal !== '') parts.push({ text: message.refusal });
  if (!Array.isArray(message.tool_calls)) return parts;
  message.tool_calls.forEach((call: unknown, i: number) => {
    const param = `messages[${index}].tool_calls[${i}]`;
    if (!isRecord(call) || !isRecord(call.function) || typeof call.function.name !== 'string') throw bad('a tool call needs a function name.', param);
    const name = call.function.name;
    if (typeof call.id === 'string') callNames.set(call.id, name);
    const part: GeminiPart = { functionCall: { name, args: parseArguments(call.function.arguments, `${param}.function.arguments`) } };
    const google = isRecord(call.extra_content) && isRecord(call.extra_content.google) ? call.extra_content.google : undefined;
    const signature = typeof google?.thought_signature === 'string' ? google.thought_signature : undefined;
    // Only the first call of a parallel batch carries the signature.
    if (signature) part.thoughtSignature = signature;
    else if (needsSignature && i === 0) part.thoughtSignature = SKIP_SIGNATURE;
    parts.push(part);
  });
  return parts;
}

function toolResultPart(message: ChatMessage, index: number, callNames: Map<string, string>): GeminiPart {
  const id = typeof message.tool_call_id === 'string' ? message.tool_call_id : undefined;
  const name = (id !== undefined ? callNames.get(id) : undefined) ?? (typeof message.name === 'string' ? message.name : undefined);
  if (!name) throw bad(`no earlier assistant tool call has the id '${quoteInput(id ?? '')}', so the function name is unknown.`, `messages[${index}].tool_call_id`);
  // A function response carries text (its JSON): an image or a file among the parts would be dropped without a word.
  if (Array.isArray(message.content)) {
    const other = message.content.findIndex((part) => !isRecord(part) || part.type !== 'text');
    if (other !== -1) throw bad('a tool result sent to Gemini may hold text parts only; send an image or file in a user message instead.', `messages[${index}].content[${other}]`);
  }
  return { functionResponse: { name, response: functionResult(message.content) } };
}

/** Gemini 3 models validate thought signatures on replayed function calls. */
function validatesSignatures(model: string): boolean {
  return /(^|\/)gemini-([3-9]|\d{2,})/.test(model);
}

export interface GeminiPrompt {
  contents: GeminiContent[];
  systemInstruction?: { parts: GeminiPart[] };
}

/** OpenAI messages → Gemini `contents` and `systemInstruction`. Adjacent turns of one role are merged. */
export function toGeminiContents(messages: ChatMessage[], model: string): GeminiPrompt {
  const system: GeminiPart[] = [];
  const contents: GeminiContent[] = [];
  const callNames = new Map<string, string>();
  const push = (role: GeminiContent['role'], parts: GeminiPart[]): void => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last && last.role === role) for (const part of parts) last.parts.push(part);
    else contents.push({ role, parts });
  };
  messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text !== '') system.push({ text });
        break;
      }
      case 'user':
        push('user', contentParts(message.content, `messages[${index}].content`));
        break;
      case 'assistant':
        push('model', assistantParts(message, index, callNames, validatesSignatures(model)));
        break;
      case 'tool':
      case 'function':
        push('user', [toolResultPart(message, index, callNames)]);
        break;
      default:
        throw bad(`messages with role '${quoteValue(message.role)}' are not supported.`, `messages[${index}].role`);
    }
  });
  return system.length > 0 ? { contents, systemInstruction: { parts: system } } : { contents };
}

function functionDeclarations(tools: unknown): Record<string, unknown>[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((tool, i) => {
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function) || typeof tool.function.name !== 'string') {
      throw bad('only function tools are supported.', `tools[${i}]`);
    }
    const fn = tool.function;
    const declaration: Record<string, unknown> = { name: fn.name };
    if (typeof fn.description === 'string') declaration.description = fn.description;
    // A function without parameters must leave them out: Gemini rejects an object schema without properties.
    const params = fn.parameters;
    const empty = isRecord(params) && params.type === 'object' && !(isRecord(params.properties) && Object.keys(params.properties).length > 0);
    if (isRecord(params) && !empty) {
      const subset = toGeminiSchema(params);
      // A recursive model cannot be inlined into the subset: its JSON Schema goes in the field that takes references.
      if (subset === null) declaration.parametersJsonSchema = toGeminiJsonSchema(params);
      else declaration.parameters = subset;
    }
    return declaration;
  });
}

function functionCallingConfig(choice: unknown): Record<string, unknown> | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === 'auto') return { mode: 'AUTO' };
  if (choice === 'none') return { mode: 'NONE' };
  if (choice === 'required') return { mode: 'ANY' };
  if (isRecord(choice) && isRecord(choice.function) && typeof choice.function.name === 'string') {
    return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
  }
  throw bad('tool_choice must be auto, none, required or a named function.', 'tool_choice');
}

const THINKING_BUDGETS: Record<string, number> = { none: 0, minimal: 1024, low: 1024, medium: 8192, high: 24576 };

/** reasoning_effort → thinkingConfig: Gemini 3 takes a level, earlier models a token budget. */
function thinkingConfig(effort: unknown, model: string): Record<string, unknown> | undefined {
  if (typeof effort !== 'string' || !Object.hasOwn(THINKING_BUDGETS, effort)) return undefined;
  const includeThoughts = effort !== 'none';
  if (validatesSignatures(model)) return { thinkingLevel: effort === 'medium' || effort === 'high' ? 'high' : 'low', includeThoughts };
  return { thinkingBudget: THINKING_BUDGETS[effort], includeThoughts };
}

function generationConfig(request: ChatCompletionRequest, model: string): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (typeof maxTokens === 'number') config.maxOutputTokens = maxTokens;
  if (typeof request.temperature === 'number') config.temperature = request.temperature;
  if (typeof request.top_p === 'number') config.topP = request.top_p;
  if (typeof request.top_k === 'number') config.topK = request.top_k;
  if (typeof request.stop === 'string') config.stopSequences = [request.stop];
  else if (Array.isArray(request.stop) && request.stop.length > 0) config.stopSequences = request.stop;
  if (typeof request.n === 'number' && request.n !== 1) config.candidateCount = request.n;
  if (isNumberValue(request.seed)) config.seed = request.seed;
  // OpenAI's logprobs / top_logprobs are Gemini's responseLogprobs / logprobs (the top candidates per step).
  if (request.logprobs === true) {
    config.responseLogprobs = true;
    if (typeof request.top_logprobs === 'number') config.logprobs = request.top_logprobs;
  }
  if (typeof request.presence_penalty === 'number') config.presencePenalty = request.presence_penalty;
  if (typeof request.frequency_penalty === 'number') config.frequencyPenalty = request.frequency_penalty;
  const format = request.response_format;
  if (isRecord(format) && (format.type === 'json_object' || format.type === 'json_schema')) {
    config.responseMimeType = 'application/json';
    const schema = isRecord(format.json_schema) ? format.json_schema.schema : undefined;
    if (format.type === 'json_schema' && isRecord(schema)) {
      const subset = toGeminiSchema(schema);
      // responseSchema takes the OpenAPI subset (every model); a recursive model, which cannot be inlined into it,
      // goes as JSON Schema in responseJsonSchema, which takes references (Gemini unrolls a cycle a few levels).
      if (subset === null) config.responseJsonSchema = toGeminiJsonSchema(schema);
      else config.responseSchema = subset;
    }
  }
  const thinking = thinkingConfig(request.reasoning_effort, model);
  if (thinking) config.thinkingConfig = thinking;
  return config;
}

/**
 * Gemini's refusal of `parallel_tool_calls: false` (see refuseSingleToolCall): its FunctionCallingConfig holds a mode
 * and allowed names only. Anthropic's adapter sends it as `disable_parallel_tool_use`.
 */
const SINGLE_TOOL_CALL_REFUSAL = 'gemini: parallel_tool_calls: false is not supported: Gemini has no setting for one tool call per turn and may answer with several. Leave the field out (or set it true) and handle each call of a turn.';

/**
 * The canonical (OpenAI) request as a Gemini `GenerateContentRequest` body. Pure, so the Vertex adapter can
 * send the same body to its own URL. `user` (an end-user id for the vendor's abuse monitoring) has no field in
 * generateContent and changes nothing in the answer: it is not sent, as on Bedrock's Converse; the request log keeps it.
 */
export function toGeminiRequest(request: ChatCompletionRequest, model: string): Record<string, unknown> {
  if (!Array.isArray(request.messages)) throw bad('messages must be an array.', 'messages');
  const body: Record<string, unknown> = { ...toGeminiContents(request.messages, model) };
  const declarations = functionDeclarations(request.tools);
  refuseSingleToolCall(request, SINGLE_TOOL_CALL_REFUSAL);
  if (declarations.length > 0) body.tools = [{ functionDeclarations: declarations }];
  const calling = functionCallingConfig(request.tool_choice);
  if (calling && declarations.length > 0) body.toolConfig = { functionCallingConfig: calling };
  const config = generationConfig(request, model);
  if (Object.keys(config).length > 0) body.generationConfig = config;
  return body;
}
