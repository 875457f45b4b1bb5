import type { ChatCompletionRequest, ChatMessage } from '../../core/canonical.js';
import type { GatewayError } from '../../core/errors.js';
import { invalidArgument } from './errors.js';
import { fromGeminiSchema } from '../../wire/gemini/schema.js';
import { field, type Json } from '../../wire/gemini/shapes.js';
import { isRecord } from '../../core/is-record.js';
import { isExactNumber } from '../../exact-numbers.js';
import { quoteInput, quoteValue } from '../../core/quote-input.js';

/**
 * Gemini's GenerateContentRequest → the canonical (OpenAI chat-completions) request. The inverse of the
 * outbound adapter in src/providers/gemini/request.ts: contents become messages, function declarations tools,
 * the generation config OpenAI's sampling fields.
 */

export interface GeminiDialectOptions {
  /** Whether Gemini-only extras (thought signatures) may ride along: see keepsGeminiFields. */
  geminiFields: boolean;
  /**
   * Set by the lenient read (readGenerateCanonical): what the canonical form cannot express (built-in tools, part
   * kinds it has no counterpart for, a cached-content reference) is recorded here and left out instead of refused.
   */
  untranslatable?: GatewayError[];
}

/** What the reply needs to know of the request. */
export interface GeminiRequestInfo {
  /** `thinkingConfig.includeThoughts`: reasoning goes back as `thought: true` parts only when asked for. */
  includeThoughts: boolean;
  /**
   * Set when the response schema's root was not an object, so it was asked for as WRAPPED_ANSWER's property (see
   * wrapRoot): how the property is given back, as JSON, or as its bare text for `text/x.enum` (as Gemini answers).
   */
  wrappedAnswer: WrappedAnswer | null;
}

/** The property a response schema whose root is not an object is asked for under (see wrapRoot). */
export const WRAPPED_ANSWER = 'value';

export type WrappedAnswer = 'json' | 'text';

/**
 * A response schema whose root is not an object (Google's own example is an array of recipes) as an object's one
 * required property: OpenAI's structured outputs, like Anthropic's, refuse any other root ('schema must be a JSON
 * Schema of type "object"'). The answer's text is unwrapped on the way back (unwrapAnswer in response.ts).
 */
function wrapRoot(schema: Json): { schema: Json; wrapped: boolean } {
  if (schema.type === 'object' || (schema.type === undefined && isRecord(schema.properties))) return { schema, wrapped: false };
  // Definitions stay at the root, where the schema's `#/$defs/...` references point.
  const { $defs, definitions, ...inner } = schema;
  const wrapper: Json = { type: 'object', properties: { [WRAPPED_ANSWER]: inner }, required: [WRAPPED_ANSWER], additionalProperties: false };
  if ($defs !== undefined) wrapper.$defs = $defs;
  if (definitions !== undefined) wrapper.definitions = definitions;
  return { schema: wrapper, wrapped: true };
}

/** Checks what the gateway needs before translating, with Google's wording. */
export function readGenerateRequest(body: unknown): Json {
  if (!isRecord(body)) throw invalidArgument('Invalid JSON payload received. Expected an object (GenerateContentRequest).');
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) throw invalidArgument('* GenerateContentRequest.contents: contents is not specified', 'contents');
  return body;
}

/**
 * A field Google reads as a message (an object): anything else is Google's 400, not a field the translation quietly
 * leaves unread (a thinkingConfig of 5 was no thinking config on one provider and a 400 on Gemini).
 */
function objectOrAbsent(value: unknown, name: string, param: string): void {
  if (value !== undefined && value !== null && !isRecord(value)) throw invalidArgument(`Invalid value at '${name}', ${quoteInput(JSON.stringify(value) ?? '')}`, param);
}

function unsupportedError(what: string, param: string): GatewayError {
  return invalidArgument(`* GenerateContentRequest.${param}: ${what} cannot be translated by the gateway for a provider of another format.`, param);
}

/** Refuses what the canonical form cannot express, or, in the lenient read, records it (the caller leaves it out). */
function leaveOut(options: Pick<GeminiDialectOptions, 'untranslatable'>, what: string, param: string): void {
  if (!options.untranslatable) throw unsupportedError(what, param);
  // Only the first is the 400 given: a million parts left out must not build (and hold) a million errors.
  if (options.untranslatable.length === 0) options.untranslatable.push(unsupportedError(what, param));
}

/** The base64 `inlineData` of a part as the matching OpenAI content part. */
function inlinePart(data: unknown, param: string): Json {
  if (!isRecord(data) || typeof data.data !== 'string' || typeof field(data, 'mimeType') !== 'string') {
    throw invalidArgument(`* GenerateContentRequest.${param}.inline_data.mime_type: Required`, param);
  }
  const mime = (field(data, 'mimeType') as string).toLowerCase();
  const url = `data:${mime};base64,${data.data}`;
  if (mime.startsWith('image/')) return { type: 'image_url', image_url: { url } };
  const audio = /^audio\/(?:x-)?(wav|mp3|mpeg)$/.exec(mime);
  if (audio) return { type: 'input_audio', input_audio: { data: data.data, format: audio[1] === 'mpeg' ? 'mp3' : audio[1] } };
  return { type: 'file', file: { file_data: url } };
}

/** A Gemini Files API upload (`https://generativelanguage.googleapis.com/v1beta/files/<id>`), readable only with the uploader's key. */
const FILES_API_URI = /^https:\/\/generativelanguage\.googleapis\.com\/[^/]+\/files\//i;

/**
 * A `fileData` link as an image URL part (OpenAI's only URL-carrying part), or why it cannot be one: a Gemini Files
 * API upload (https://ai.google.dev/gemini-api/docs/files) only the Gemini API opens; for any target but a Gemini-format
 * one (Vertex AI's adapter turns the URL back into fileData, and reads Cloud Storage itself) neither a `gs://`
 * object nor a file that is not an image (a PDF, a video) is something an image URL can carry.
 */
function filePart(data: unknown, param: string, geminiFields: boolean): { part: Json } | { refused: string } {
  const uri = isRecord(data) ? field(data, 'fileUri') : undefined;
  if (typeof uri !== 'string' || uri === '') throw invalidArgument(`* GenerateContentRequest.${param}.file_data.file_uri: Required`, param);
  const mime = isRecord(data) ? field(data, 'mimeType') : undefined;
  if (FILES_API_URI.test(uri)) return { refused: 'a fileData part naming a Gemini Files API upload' };
  if (!geminiFields && /^gs:\/\//i.test(uri)) return { refused: 'a fileData part naming a Cloud Storage object' };
  if (!geminiFields && typeof mime === 'string' && !mime.toLowerCase().startsWith('image/')) return { refused: `a fileData part of type '${quoteInput(mime)}'` };
  return { part: { type: 'image_url', image_url: { url: uri } } };
}

interface PendingCall {
  id: string;
  name: string;
  answered: boolean;
}

/** Calls in the order they were made, read from a cursor that only moves past answered ones. */
interface CallQueue {
  calls: PendingCall[];
  at: number;
}

function firstOpen(queue: CallQueue | undefined): PendingCall | undefined {
  if (!queue) return undefined;
  while (queue.at < queue.calls.length && queue.calls[queue.at]!.answered) queue.at++;
  return queue.calls[queue.at];
}

function enqueue(queues: Map<string, CallQueue>, key: string, call: PendingCall): void {
  const queue = queues.get(key);
  if (queue) queue.calls.push(call);
  else queues.set(key, { calls: [call], at: 0 });
}

/**
 * The calls of the latest model turn, indexed so that matching each response costs the same however many calls
 * there are: searching the open calls for every response made a turn of 40 000 calls and responses (3.5 MB) hold
 * the event loop for 16 s.
 */
class PendingCalls {
  private readonly all: CallQueue = { calls: [], at: 0 };
  private readonly byId = new Map<string, CallQueue>();
  private readonly byName = new Map<string, CallQueue>();

  add(call: PendingCall): void {
    this.all.calls.push(call);
    enqueue(this.byId, call.id, call);
    enqueue(this.byName, call.name, call);
  }

  /** The first open call with this id, else with this name, else the first open one. */
  match(id: string | undefined, name: string): PendingCall | undefined {
    return (id !== undefined ? firstOpen(this.byId.get(id)) : undefined) ?? firstOpen(this.byName.get(name)) ?? firstOpen(this.all);
  }
}

/** Translates the conversation turn by turn, matching function responses to the calls of the turn before. */
class ContentsReader {
  readonly messages: ChatMessage[] = [];
  /** The function calls of the latest model turn, which the next user turn answers. */
  private pending = new PendingCalls();
  /** Whether the content read last was the model's: a model content right after it continues the same turn. */
  private inModelTurn = false;

  constructor(private readonly options: GeminiDialectOptions) {}

  read(content: unknown, i: number): void {
    const param = `contents[${i}]`;
    if (!isRecord(content)) throw invalidArgument(`Invalid value at '${param}' (type.googleapis.com/google.ai.generativelanguage.v1beta.Content)`, param);
    const parts = content.parts;
    if (!Array.isArray(parts) || parts.length === 0) throw invalidArgument(`* GenerateContentRequest.${param}.parts: contents.parts must not be empty.`, `${param}.parts`);
    const role = content.role ?? 'user';
    if (role === 'model') this.modelTurn(parts, param, i);
    else if (role === 'user' || role === 'function') this.userTurn(parts, param);
    else throw invalidArgument('Please use a valid role: user, model.', `${param}.role`);
  }

  private modelTurn(parts: unknown[], param: string, turn: number): void {
    let text = '';
    const calls: Json[] = [];
    parts.forEach((part, j) => {
      const where = `${param}.parts[${j}]`;
      if (!isRecord(part)) throw invalidArgument(`Invalid value at '${where}'`, where);
      if (typeof part.text === 'string') {
        // Thought summaries were the model's reasoning, not its answer; they are not replayed.
        if (part.thought !== true) text += part.text;
        return;
      }
      const call = field(part, 'functionCall');
      if (call !== undefined) {
        if (!isRecord(call) || typeof call.name !== 'string' || call.name === '') throw invalidArgument(`* GenerateContentRequest.${where}.function_call.name: Name cannot be empty.`, where);
        // Gemini names calls only sometimes; the canonical format needs ids, so the position makes one.
        const id = typeof call.id === 'string' && call.id !== '' ? call.id : `call_${turn}_${j}`;
        const out: Json = { id, type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) } };
        const signature = field(part, 'thoughtSignature');
        if (this.options.geminiFields && typeof signature === 'string') out.extra_content = { google: { thought_signature: signature } };
        calls.push(out);
        return;
      }
      leaveOut(this.options, `a model part other than text or functionCall (${Object.keys(part).join(', ')})`, where);
    });
    // Consecutive model contents are one turn: @google/genai's chats keep a streamed answer as one content per event,
    // so the turn's text and calls are gathered into one assistant message, and a response answers any of its calls.
    const continues = this.inModelTurn;
    this.inModelTurn = true;
    if (!continues) this.pending = new PendingCalls();
    for (const call of calls) this.pending.add({ id: call.id as string, name: (call.function as Json).name as string, answered: false });
    if (text === '' && calls.length === 0) return;
    const last = this.messages.at(-1);
    if (continues && last?.role === 'assistant') {
      if (text !== '') last.content = typeof last.content === 'string' ? last.content + text : text;
      if (calls.length > 0) last.tool_calls = Array.isArray(last.tool_calls) ? (last.tool_calls as Json[]).concat(calls) : calls;
      return;
    }
    const message: ChatMessage = { role: 'assistant', content: text === '' ? null : text };
    if (calls.length > 0) message.tool_calls = calls;
    this.messages.push(message);
  }

  private userTurn(parts: unknown[], param: string): void {
    this.inModelTurn = false;
    const results: ChatMessage[] = [];
    /** The media the functions answered with (functionResponse.parts), which a tool message cannot carry. */
    const media: Json[] = [];
    const content: Json[] = [];
    parts.forEach((part, j) => {
      const where = `${param}.parts[${j}]`;
      if (!isRecord(part)) throw invalidArgument(`Invalid value at '${where}'`, where);
      if (typeof part.text === 'string') {
        if (part.text !== '' && part.thought !== true) content.push({ type: 'text', text: part.text });
        return;
      }
      const response = field(part, 'functionResponse');
      if (response !== undefined) {
        results.push(this.toolResult(response, where));
        this.responseMedia(response, where, media);
        return;
      }
      const inline = field(part, 'inlineData');
      if (inline !== undefined) {
        content.push(inlinePart(inline, where));
        return;
      }
      const file = field(part, 'fileData');
      if (file !== undefined) {
        const read = filePart(file, where, this.options.geminiFields);
        if ('part' in read) content.push(read.part);
        else leaveOut(this.options, read.refused, where);
        return;
      }
      leaveOut(this.options, `a part other than text, inlineData, fileData or functionResponse (${Object.keys(part).join(', ')})`, where);
    });
    // Tool results must follow the assistant's calls directly in the canonical format, so they go first.
    for (const result of results) this.messages.push(result);
    this.pending = new PendingCalls();
    // The functions' media come first, right after the tool messages, as the /anthropic route places a tool_result's
    // images; concat, not spread: a turn may hold more parts than a call's arguments can.
    const all = media.length > 0 ? media.concat(content) : content;
    if (all.length === 0) return;
    const only = all[0];
    this.messages.push({ role: 'user', content: all.length === 1 && only?.type === 'text' ? only.text : all });
  }

  /**
   * A functionResponse's `parts` (Gemini 3's multimodal function responses: an image or a PDF a tool returned) as
   * canonical parts for the user message that follows the tool messages, since a Chat Completions tool message takes
   * text only. Leaving them out would have the model answer about a file it never saw.
   */
  private responseMedia(response: unknown, where: string, media: Json[]): void {
    const parts = isRecord(response) ? response.parts : undefined;
    if (parts === undefined || parts === null) return;
    if (!Array.isArray(parts)) throw invalidArgument(`Invalid value at '${where}.function_response.parts'`, `${where}.functionResponse.parts`);
    parts.forEach((part, k) => {
      const at = `${where}.function_response.parts[${k}]`;
      if (!isRecord(part)) throw invalidArgument(`Invalid value at '${at}'`, at);
      const inline = field(part, 'inlineData');
      if (inline !== undefined) {
        media.push(inlinePart(inline, at));
        return;
      }
      const file = field(part, 'fileData');
      if (file !== undefined) {
        const read = filePart(file, at, this.options.geminiFields);
        if ('part' in read) media.push(read.part);
        else leaveOut(this.options, read.refused, at);
        return;
      }
      leaveOut(this.options, `a function response part other than inlineData or fileData (${Object.keys(part).join(', ')})`, at);
    });
  }

  /** A functionResponse as a `tool` message, its id that of the call it answers: by id, else by name in order, else in order. */
  private toolResult(response: unknown, where: string): ChatMessage {
    if (!isRecord(response) || typeof response.name !== 'string' || response.name === '') {
      throw invalidArgument(`* GenerateContentRequest.${where}.function_response.name: Name cannot be empty.`, where);
    }
    const call = this.pending.match(typeof response.id === 'string' ? response.id : undefined, response.name);
    if (!call) throw invalidArgument('Please ensure that function response turn comes immediately after a function call turn.', where);
    call.answered = true;
    return { role: 'tool', tool_call_id: call.id, content: JSON.stringify(response.response ?? {}) };
  }
}

function systemText(instruction: unknown): string {
  if (typeof instruction === 'string') return instruction;
  if (!isRecord(instruction) || !Array.isArray(instruction.parts)) throw invalidArgument("Invalid value at 'system_instruction'", 'systemInstruction');
  return instruction.parts
    .map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text !== '')
    .join('\n');
}

/** `systemInstruction` and `contents` as canonical messages. */
export function canonicalMessages(contents: unknown[], systemInstruction: unknown, options: GeminiDialectOptions): ChatMessage[] {
  const reader = new ContentsReader(options);
  const messages: ChatMessage[] = [];
  if (systemInstruction !== undefined && systemInstruction !== null) {
    const text = systemText(systemInstruction);
    if (text !== '') messages.push({ role: 'system', content: text });
  }
  contents.forEach((content, i) => reader.read(content, i));
  return [...messages, ...reader.messages];
}

/** `tools[].functionDeclarations` as OpenAI function tools. Gemini's built-in tools have no canonical counterpart. */
export function canonicalTools(tools: unknown, options: Pick<GeminiDialectOptions, 'untranslatable'> = {}): Json[] {
  if (tools === undefined || tools === null) return [];
  if (!Array.isArray(tools)) throw invalidArgument("Invalid value at 'tools'", 'tools');
  return tools.flatMap((tool, i) => {
    if (!isRecord(tool)) throw invalidArgument(`Invalid value at 'tools[${i}]'`, `tools[${i}]`);
    const others = Object.keys(tool).filter((key) => key !== 'functionDeclarations' && key !== 'function_declarations');
    if (others.length > 0) leaveOut(options, `the built-in tool '${quoteInput(others.join(', '))}'`, `tools[${i}]`);
    const declarations = field(tool, 'functionDeclarations');
    if (declarations === undefined || declarations === null) return [];
    if (!Array.isArray(declarations)) throw invalidArgument(`Invalid value at 'tools[${i}].function_declarations'`, `tools[${i}].functionDeclarations`);
    return declarations.map((declaration, j): Json => {
      const where = `tools[${i}].function_declarations[${j}]`;
      if (!isRecord(declaration) || typeof declaration.name !== 'string' || declaration.name === '') {
        throw invalidArgument(`* GenerateContentRequest.${where}.name: Name cannot be empty.`, where);
      }
      const fn: Json = { name: declaration.name };
      if (typeof declaration.description === 'string') fn.description = declaration.description;
      objectOrAbsent(declaration.parameters, `tools[${i}].function_declarations[${j}].parameters`, where);
      const jsonSchema = field(declaration, 'parametersJsonSchema');
      if (isRecord(jsonSchema)) fn.parameters = jsonSchema;
      else if (isRecord(declaration.parameters)) fn.parameters = fromGeminiSchema(declaration.parameters);
      return { type: 'function', function: fn };
    });
  });
}

/**
 * `toolConfig.functionCallingConfig` as tool_choice: AUTO/VALIDATED → auto, NONE → none, ANY → required, or the
 * named function when exactly one is allowed. ANY with several allowed names also narrows the tools to them.
 */
export function canonicalToolChoice(toolConfig: unknown, tools: Json[]): { tool_choice?: unknown; tools: Json[] } {
  const calling = isRecord(toolConfig) ? field(toolConfig, 'functionCallingConfig') : undefined;
  if (!isRecord(calling)) return { tools };
  const mode = typeof calling.mode === 'string' ? calling.mode.toUpperCase() : 'MODE_UNSPECIFIED';
  const allowedRaw = field(calling, 'allowedFunctionNames');
  const allowed = Array.isArray(allowedRaw) ? allowedRaw.filter((name): name is string => typeof name === 'string') : [];
  switch (mode) {
    case 'AUTO':
    case 'VALIDATED':
      return { tool_choice: 'auto', tools };
    case 'NONE':
      return { tool_choice: 'none', tools };
    case 'ANY': {
      if (allowed.length === 1) return { tool_choice: { type: 'function', function: { name: allowed[0] } }, tools };
      // A set, not allowed.includes per tool: 40 000 tools and as many names held the event loop for 3 s.
      const names = new Set(allowed);
      const narrowed = allowed.length > 0 ? tools.filter((tool) => names.has((tool.function as Json).name as string)) : tools;
      return { tool_choice: 'required', tools: narrowed };
    }
    case 'MODE_UNSPECIFIED':
      return { tools };
    default:
      throw invalidArgument(`Invalid value at 'tool_config.function_calling_config.mode', "${quoteValue(calling.mode)}"`, 'toolConfig');
  }
}

const LEVELS = new Set(['minimal', 'low', 'medium', 'high']);

/**
 * `thinkingConfig` as reasoning_effort. A level maps by name; a token budget by the outbound adapter's cut
 * points (low 1,024, medium 8,192, high 24,576), so it maps back to the same budget. A budget of 0 turns thinking
 * off, which only Gemini-format targets are asked (`none` is not an effort every OpenAI model takes); -1
 * (dynamic) leaves the model's default.
 */
export function canonicalEffort(thinking: unknown, geminiFields: boolean): string | undefined {
  if (!isRecord(thinking)) return undefined;
  const level = field(thinking, 'thinkingLevel');
  if (typeof level === 'string' && LEVELS.has(level.toLowerCase())) return level.toLowerCase();
  const budget = field(thinking, 'thinkingBudget');
  if (typeof budget !== 'number' || budget < 0) return undefined;
  if (budget === 0) return geminiFields ? 'none' : undefined;
  if (budget <= 1024) return 'low';
  if (budget <= 8192) return 'medium';
  return 'high';
}

function schemaFormat(schema: Json, mime: unknown): { format: Json; wrapped: WrappedAnswer | null } {
  const root = wrapRoot(schema);
  const wrapped = !root.wrapped ? null : mime === 'text/x.enum' ? 'text' : 'json';
  return { format: { type: 'json_schema', json_schema: { name: 'response', schema: root.schema } }, wrapped };
}

/** `responseMimeType` with `responseSchema` / `responseJsonSchema` as response_format. */
function responseFormat(config: Json, options: GeminiDialectOptions): { format: Json; wrapped: WrappedAnswer | null } | undefined {
  const mime = field(config, 'responseMimeType');
  const jsonSchema = field(config, 'responseJsonSchema') ?? config._responseJsonSchema;
  const schema = field(config, 'responseSchema');
  objectOrAbsent(schema, 'generation_config.response_schema', 'generationConfig.responseSchema');
  if (isRecord(jsonSchema)) return schemaFormat(jsonSchema, mime);
  const converted = isRecord(schema) ? fromGeminiSchema(schema) : undefined;
  if (isRecord(converted)) return schemaFormat(converted, mime);
  if (mime === undefined || mime === null || mime === 'text/plain') return undefined;
  if (mime === 'application/json') return { format: { type: 'json_object' }, wrapped: null };
  leaveOut(options, `the response MIME type '${quoteValue(mime)}'`, 'generation_config.response_mime_type');
  return undefined;
}

function generationFields(config: unknown, options: GeminiDialectOptions): { fields: Json } & GeminiRequestInfo {
  const { geminiFields } = options;
  const fields: Json = {};
  if (config === undefined || config === null) return { fields, includeThoughts: false, wrappedAnswer: null };
  if (!isRecord(config)) throw invalidArgument("Invalid value at 'generation_config'", 'generationConfig');
  const numbers: Array<[string, string]> = [
    // OpenAI's current name for the limit (its reasoning models refuse the deprecated max_tokens; vendors that
    // know only max_tokens get it renamed by their quirks).
    ['maxOutputTokens', 'max_completion_tokens'],
    ['temperature', 'temperature'],
    ['topP', 'top_p'],
    // Carried to the formats that take it (Anthropic, Vertex AI, Bedrock's Claude, see request-for.ts).
    ['topK', 'top_k'],
    ['seed', 'seed'],
    ['presencePenalty', 'presence_penalty'],
    ['frequencyPenalty', 'frequency_penalty'],
    ['candidateCount', 'n'],
  ];
  for (const [gemini, openai] of numbers) {
    const raw = field(config, gemini);
    if (raw === undefined || raw === null) continue;
    // A seed past a double's precision, kept exact (exact-numbers.ts): its digits go on for the upstream to judge.
    if (isExactNumber(raw)) {
      fields[openai] = raw;
      continue;
    }
    // Google reads its numbers as protobuf JSON does: a number, or a string holding one (`"100"`).
    const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidArgument(`Invalid value at 'generation_config.${gemini}', ${JSON.stringify(raw)}`, `generationConfig.${gemini}`);
    fields[openai] = value;
  }
  // A count of tokens (Google's int32): a fraction or a negative count reaches no model as the client meant it.
  if (fields.top_k !== undefined && (typeof fields.top_k !== 'number' || !Number.isInteger(fields.top_k) || fields.top_k < 0)) {
    throw invalidArgument(`Invalid value at 'generation_config.top_k' (TYPE_INT32), ${JSON.stringify(field(config, 'topK'))}`, 'generationConfig.topK');
  }
  // One candidate is every vendor's default; n travels only when more are asked for.
  if (fields.n === 1) delete fields.n;
  const stops = field(config, 'stopSequences');
  if (Array.isArray(stops) && stops.length > 0) {
    if (stops.some((stop) => typeof stop !== 'string')) throw invalidArgument("Invalid value at 'generation_config.stop_sequences'", 'generationConfig.stopSequences');
    fields.stop = stops;
  }
  // Gemini's top candidates per step (`logprobs`) count only with responseLogprobs, as OpenAI's top_logprobs with logprobs.
  if (field(config, 'responseLogprobs') === true) {
    fields.logprobs = true;
    const top = field(config, 'logprobs');
    const count = typeof top === 'string' && top.trim() !== '' ? Number(top) : top;
    if (count !== undefined && count !== null) {
      if (typeof count !== 'number' || !Number.isInteger(count)) throw invalidArgument(`Invalid value at 'generation_config.logprobs', ${JSON.stringify(top)}`, 'generationConfig.logprobs');
      fields.top_logprobs = count;
    }
  }
  const format = responseFormat(config, options);
  if (format) fields.response_format = format.format;
  // Images or audio asked for (Gemini's image and speech models) cannot come from a chat completion, which answers in
  // text: that answer would silently be another than the one asked for. TEXT alone (or an empty list) is the default.
  const modalities = field(config, 'responseModalities');
  if (Array.isArray(modalities) && modalities.some((modality) => typeof modality !== 'string' || modality.toUpperCase() !== 'TEXT')) {
    leaveOut(options, `the response modalities '${quoteInput(modalities.slice(0, 8).map(String).join(', '))}'`, 'generation_config.response_modalities');
  }
  const thinking = field(config, 'thinkingConfig');
  objectOrAbsent(thinking, 'generation_config.thinking_config', 'generationConfig.thinkingConfig');
  const effort = canonicalEffort(thinking, geminiFields);
  if (effort) fields.reasoning_effort = effort;
  return { fields, includeThoughts: isRecord(thinking) && field(thinking, 'includeThoughts') === true, wrappedAnswer: format?.wrapped ?? null };
}

/**
 * A GenerateContentRequest as the canonical request for `model` (the name the pipeline routes on). Safety
 * settings have no canonical counterpart and are dropped; built-in tools, part kinds without a counterpart and a
 * cached-content reference are refused (or, read leniently, left out). A stream always asks for usage, which
 * Gemini's last event carries.
 */
export function canonicalGenerateRequest(
  body: Json,
  model: string,
  stream: boolean,
  options: GeminiDialectOptions,
): { request: ChatCompletionRequest; info: GeminiRequestInfo } {
  if (field(body, 'cachedContent') !== undefined) leaveOut(options, 'a cachedContent reference', 'cached_content');
  const messages = canonicalMessages(body.contents as unknown[], field(body, 'systemInstruction'), options);
  // (A body whose every part was left out by the lenient read still goes to a Gemini upstream as it is.)
  if (messages.length === 0 && !options.untranslatable?.length) throw invalidArgument('* GenerateContentRequest.contents: contents is not specified', 'contents');
  const request: ChatCompletionRequest = { model, messages };
  const { fields, includeThoughts, wrappedAnswer } = generationFields(field(body, 'generationConfig'), options);
  Object.assign(request, fields);
  const declared = canonicalTools(body.tools, options);
  objectOrAbsent(field(body, 'toolConfig'), 'tool_config', 'toolConfig');
  // OpenAI refuses tool_choice without tools, so it travels only with them.
  if (declared.length > 0) {
    const { tool_choice: choice, tools } = canonicalToolChoice(field(body, 'toolConfig'), declared);
    request.tools = tools;
    if (choice !== undefined) request.tool_choice = choice;
  }
  if (stream) {
    request.stream = true;
    request.stream_options = { include_usage: true };
  }
  return { request, info: { includeThoughts, wrappedAnswer } };
}

/** The canonical request for a GenerateContentRequest, and why it is incomplete when it is. */
export interface GeminiCanonicalRead {
  request: ChatCompletionRequest;
  info: GeminiRequestInfo;
  /**
   * Null when the canonical request says everything the body does. Otherwise the 400 the strict translation gave:
   * the request holds what could be translated (for token counts, budgets and routing), an attempt on a provider of
   * another format fails with this error (the call stage), and a Gemini upstream takes the body as it is.
   */
  untranslatable: GatewayError | null;
}

/**
 * Reads a GenerateContentRequest leniently: when the strict translation refuses something only because the
 * canonical form cannot express it (Google Search and the other built-in tools, code execution parts sent back,
 * a cachedContent reference, a response MIME type OpenAI has no counterpart for), it is read again leaving those
 * out. Malformed input is still refused, by either read. The strict read runs first, so a request that translates
 * whole costs nothing more.
 */
export function readGenerateCanonical(body: Json, model: string, stream: boolean, options: GeminiDialectOptions): GeminiCanonicalRead {
  try {
    return { ...canonicalGenerateRequest(body, model, stream, options), untranslatable: null };
  } catch (err) {
    const untranslatable: GatewayError[] = [];
    // Throws the malformed input's own 400 when there is one; what is left out is only recorded.
    const read = canonicalGenerateRequest(body, model, stream, { ...options, untranslatable });
    if (untranslatable.length === 0) throw err;
    return { ...read, untranslatable: untranslatable[0] as GatewayError };
  }
}
