// A scripted upstream that speaks the Gemini API (generativelanguage.googleapis.com v1beta, v1 and v1alpha): generateContent and
// streamGenerateContent (`alt=sse`, or a JSON array without it), batchEmbedContents, Google's error bodies, and
// its request checks.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiveExchange, readBody } from './exchange.js';
import { deliverJson, deliverStream, type UpstreamMode } from './modes.js';
import { sendRaw } from './respond.js';

export type GeminiMode =
  | Exclude<UpstreamMode, { kind: 'error' } | { kind: 'bad-json' }>
  | {
      kind: 'error';
      status: number;
      message?: string;
      /** google.rpc status name; defaults from the HTTP status. */
      googleStatus?: string;
      /** RetryInfo.retryDelay for 429s, e.g. "7s". */
      retryDelay?: string;
      /** A 400's google.rpc.BadRequest detail: the fields that were wrong, as Google names them (`generation_config.temperature`). */
      fieldViolations?: { field: string; description: string }[];
      headers?: Record<string, string>;
    }
  /** The prompt is refused before generation: promptFeedback.blockReason, no candidates. */
  | { kind: 'blocked' }
  /**
   * Sends `chunks` stream events, then an error event (what Gemini does when generation fails mid-stream): Google's
   * error object `error` (a 500 INTERNAL by default). The last `together` events go in one write with the error.
   */
  | { kind: 'stream-error'; chunks: number; error?: GoogleErrorBody['error']; together?: number };

export interface GeminiCall {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or undefined when empty or not JSON. */
  body: any;
  /** The body exactly as received (JSON.parse rounds big numbers; this does not). */
  raw?: string;
}

/** Extra native usage the next answers report, to exercise cache and thinking accounting. */
export interface UsageScript {
  cachedContentTokenCount?: number;
  thoughtsTokenCount?: number;
  /** When set, a `thought: true` part with this text precedes the answer. */
  thoughtText?: string;
  /** batchEmbedContents answers leave `usageMetadata` out (as older embedding models do). */
  omitEmbeddingUsage?: boolean;
}

export interface GeminiUpstream {
  /** e.g. http://127.0.0.1:PORT; the Gemini base URL is `${url}/v1beta`. */
  url: string;
  calls: GeminiCall[];
  /** The events of each streamed answer, in order, as planned (those a cut stream never sent included). */
  streamed: Array<Record<string, any>[]>;
  setMode(mode: GeminiMode): void;
  enqueue(...modes: GeminiMode[]): void;
  setUsage(usage: UsageScript): void;
  reset(): void;
  close(): Promise<void>;
}

const OK_MODE: GeminiMode = { kind: 'ok' };
const JSON_TYPE = 'application/json; charset=UTF-8';
const SSE_TYPE = 'text/event-stream';
const GOOGLE_HEADERS = { vary: 'Origin, X-Origin, Referer', server: 'scaffolding on HTTPServer2', 'x-content-type-options': 'nosniff' };

const STATUS_NAMES: Record<number, string> = {
  400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL', 503: 'UNAVAILABLE', 504: 'DEADLINE_EXCEEDED',
};

const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'Request contains an invalid argument.',
  403: 'The caller does not have permission',
  404: 'Requested entity was not found.',
  429: 'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The model is overloaded. Please try again later.',
  504: 'The request timed out. Please try again.',
};

const BAD_REQUEST = 'type.googleapis.com/google.rpc.BadRequest';

interface GoogleErrorBody {
  error: { code: number; message: string; status: string; details?: unknown[] };
}

function googleError(code: number, message: string, status = STATUS_NAMES[code] ?? 'UNKNOWN', details?: unknown[]): GoogleErrorBody {
  return { error: { code, message, status, ...(details ? { details } : {}) } };
}

function invalid(message: string): GoogleErrorBody {
  return googleError(400, message);
}

function unknownField(name: string, at: string | null): GoogleErrorBody {
  const description = `Invalid JSON payload received. Unknown name "${name}"${at ? ` at '${at}'` : ''}: Cannot find field.`;
  return googleError(400, description, 'INVALID_ARGUMENT', [{ '@type': BAD_REQUEST, fieldViolations: [{ field: at ?? '', description }] }]);
}

function isRecord(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// Proto JSON accepts both the lowerCamel and the snake_case field names.
const REQUEST_FIELDS = new Set(['contents', 'tools', 'toolConfig', 'tool_config', 'safetySettings', 'safety_settings', 'systemInstruction', 'system_instruction', 'generationConfig', 'generation_config', 'cachedContent', 'cached_content']);
const GENERATION_FIELDS = new Set([
  'stopSequences', 'responseMimeType', 'responseSchema', 'responseJsonSchema', 'candidateCount', 'maxOutputTokens', 'temperature', 'topP', 'topK',
  'seed', 'presencePenalty', 'frequencyPenalty', 'responseLogprobs', 'logprobs', 'thinkingConfig', 'responseModalities',
]);
const PART_DATA = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse', 'executableCode', 'codeExecutionResult'];
const PART_FIELDS = new Set([...PART_DATA, 'thought', 'thoughtSignature', 'videoMetadata']);
const SCHEMA_FIELDS = new Set([
  'type', 'format', 'title', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required', 'minProperties', 'maxProperties',
  'minLength', 'maxLength', 'pattern', 'example', 'anyOf', 'propertyOrdering', 'default', 'items', 'minimum', 'maximum',
]);

function checkSchema(schema: unknown, at: string): GoogleErrorBody | null {
  if (!isRecord(schema)) return null;
  for (const key of Object.keys(schema)) if (!SCHEMA_FIELDS.has(key)) return unknownField(key, at);
  // Schema.enum is a list of strings (proto JSON refuses any other value in it).
  if (Array.isArray(schema.enum)) {
    const i = (schema.enum as unknown[]).findIndex((value) => typeof value !== 'string');
    if (i !== -1) return invalid(`Invalid value at '${at}.enum[${i}]' (TYPE_STRING), ${JSON.stringify(schema.enum[i])}`);
  }
  if (isRecord(schema.properties)) {
    for (const [name, sub] of Object.entries(schema.properties)) {
      const problem = checkSchema(sub, `${at}.properties[${name}].value`);
      if (problem) return problem;
    }
  }
  if (Array.isArray(schema.anyOf)) {
    for (const [i, sub] of (schema.anyOf as unknown[]).entries()) {
      const problem = checkSchema(sub, `${at}.any_of[${i}]`);
      if (problem) return problem;
    }
  }
  return checkSchema(schema.items, `${at}.items`);
}

/**
 * What Gemini documents for the JSON Schema fields (responseJsonSchema, parametersJsonSchema): references are
 * resolved within the schema (`$defs`); a sub-schema with `$ref` may have no other keys but `$`-prefixed ones; a
 * cyclic reference is unrolled a few levels, so it may only be used within properties that are not required.
 * (The rules are Google's; the wording of these errors is the scripted upstream's own.)
 */
function checkJsonSchema(root: unknown, at: string): GoogleErrorBody | null {
  if (!isRecord(root)) return invalid(`* GenerateContentRequest.${at}: must be a JSON object\n`);
  const resolve = (ref: string): unknown => {
    if (ref !== '#' && !ref.startsWith('#/')) return undefined;
    let node: unknown = root;
    for (const token of ref === '#' ? [] : ref.slice(2).split('/')) node = isRecord(node) ? node[token.replaceAll('~1', '/').replaceAll('~0', '~')] : undefined;
    return node;
  };
  // `open` holds the references being followed, each with whether an optional property was passed since.
  const walk = (node: unknown, open: ReadonlyMap<string, boolean>): GoogleErrorBody | null => {
    if (!isRecord(node)) return null;
    if (typeof node.$ref === 'string') {
      const ref = node.$ref;
      const extra = Object.keys(node).find((key) => !key.startsWith('$'));
      if (extra !== undefined) return invalid(`* GenerateContentRequest.${at}: a schema with $ref may not set '${extra}'\n`);
      if (open.has(ref)) return open.get(ref) ? null : invalid(`* GenerateContentRequest.${at}: the cyclic reference '${ref}' must be within a property that is not required\n`);
      const target = resolve(ref);
      if (!isRecord(target)) return invalid(`* GenerateContentRequest.${at}: cannot resolve the reference '${ref}'\n`);
      return walk(target, new Map([...open, [ref, false]]));
    }
    const required = Array.isArray(node.required) ? (node.required as unknown[]) : [];
    const subs: [unknown, boolean][] = [];
    if (isRecord(node.properties)) for (const [name, sub] of Object.entries(node.properties)) subs.push([sub, !required.includes(name)]);
    for (const key of ['items', 'additionalProperties']) subs.push([node[key], false]);
    for (const key of ['anyOf', 'oneOf', 'prefixItems']) if (Array.isArray(node[key])) for (const sub of node[key] as unknown[]) subs.push([sub, false]);
    for (const [sub, optional] of subs) {
      const problem = walk(sub, optional ? new Map([...open].map(([ref]) => [ref, true])) : open);
      if (problem) return problem;
    }
    return null;
  };
  return walk(root, new Map());
}

/** The request checks Gemini makes that an adapter could get wrong. Returns the error body to answer with. */
/** Output limits of some Gemini models (ai.google.dev/gemini-api/docs/models), their stable versions (-001) alike. */
const OUTPUT_LIMITS: [RegExp, number][] = [
  [/^gemini-2\.0-flash(?:-lite)?(?:-\d{3})?$/, 8192],
  [/^gemini-2\.5-(?:pro|flash)/, 65536],
];

/** Gemini's 400 for a maxOutputTokens above the model's limit, in its words; null when within it or the model is not listed. */
export function outputLimitProblem(model: string, body: unknown): GoogleErrorBody | null {
  const config = isRecord(body) && isRecord(body.generationConfig) ? body.generationConfig : null;
  const asked = config?.maxOutputTokens;
  const limit = OUTPUT_LIMITS.find(([pattern]) => pattern.test(model))?.[1];
  if (typeof asked !== 'number' || limit === undefined || asked <= limit) return null;
  return invalid(`Unable to submit request because it has a maxOutputTokens value of ${asked} but the supported range is from 1 (inclusive) to ${limit + 1} (exclusive). Update the value and try again.`);
}

export function validateGeminiRequest(body: unknown): GoogleErrorBody | null {
  if (!isRecord(body)) return invalid('Invalid JSON payload received. Expected an object.');
  for (const key of Object.keys(body)) if (!REQUEST_FIELDS.has(key)) return unknownField(key, null);
  const contents: unknown = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) return invalid('* GenerateContentRequest.contents: contents is not specified\n');
  let previousCalls = 0;
  for (const [i, content] of contents.entries()) {
    if (!isRecord(content)) return invalid(`Invalid value at 'contents[${i}]'`);
    if (content.role !== undefined && content.role !== 'user' && content.role !== 'model') return invalid('Please use a valid role: user, model.');
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return invalid(`* GenerateContentRequest.contents[${i}].parts: contents.parts must not be empty.\n`);
    }
    let calls = 0;
    let responses = 0;
    for (const [j, part] of (content.parts as unknown[]).entries()) {
      if (!isRecord(part)) return invalid(`Invalid value at 'contents[${i}].parts[${j}]'`);
      for (const key of Object.keys(part)) if (!PART_FIELDS.has(key)) return unknownField(key, `contents[${i}].parts[${j}]`);
      const data = PART_DATA.filter((key) => part[key] !== undefined);
      if (data.length !== 1) return invalid(`* GenerateContentRequest.contents[${i}].parts[${j}].data: required oneof field 'data' must have one initialized field\n`);
      if (part.text !== undefined && (typeof part.text !== 'string' || part.text === '')) return invalid('Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.');
      if (part.inlineData !== undefined && (!isRecord(part.inlineData) || typeof part.inlineData.mimeType !== 'string' || typeof part.inlineData.data !== 'string')) {
        return invalid(`* GenerateContentRequest.contents[${i}].parts[${j}].inline_data.mime_type: Required\n`);
      }
      if (part.fileData !== undefined && (!isRecord(part.fileData) || typeof part.fileData.fileUri !== 'string')) {
        return invalid(`* GenerateContentRequest.contents[${i}].parts[${j}].file_data.file_uri: Required\n`);
      }
      if (part.functionCall !== undefined) {
        if (!isRecord(part.functionCall) || typeof part.functionCall.name !== 'string') return invalid(`* GenerateContentRequest.contents[${i}].parts[${j}].function_call.name: Name cannot be empty.\n`);
        if (part.functionCall.args !== undefined && !isRecord(part.functionCall.args)) return unknownField('args', `contents[${i}].parts[${j}].function_call`);
        calls++;
      }
      if (part.functionResponse !== undefined) {
        if (!isRecord(part.functionResponse) || typeof part.functionResponse.name !== 'string') return invalid(`* GenerateContentRequest.contents[${i}].parts[${j}].function_response.name: Name cannot be empty.\n`);
        if (!isRecord(part.functionResponse.response)) {
          return invalid(`Invalid JSON payload received. Unknown name "response" at 'contents[${i}].parts[${j}].function_response': Proto field is not repeating, cannot start list.`);
        }
        responses++;
      }
    }
    if (responses > 0 && (content.role === 'model' || previousCalls === 0)) {
      return invalid('Please ensure that function response turn comes immediately after a function call turn.');
    }
    if (responses > 0 && responses !== previousCalls) {
      return invalid('Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.');
    }
    previousCalls = content.role === 'model' ? calls : 0;
  }
  const system = body.systemInstruction ?? body.system_instruction;
  if (system !== undefined && (!isRecord(system) || !Array.isArray(system.parts))) return invalid("Invalid value at 'system_instruction'");
  const config = body.generationConfig ?? body.generation_config;
  if (config !== undefined) {
    if (!isRecord(config)) return invalid("Invalid value at 'generation_config'");
    for (const key of Object.keys(config)) if (!GENERATION_FIELDS.has(key)) return unknownField(key, 'generation_config');
    // As Gemini does: a handful of candidates at most (the scripted answer builds one per candidate).
    const count = config.candidateCount;
    if (count !== undefined && !(Number.isInteger(count) && (count as number) >= 1 && (count as number) <= 8)) {
      return invalid(`* GenerateContentRequest.generation_config.candidate_count: must be an integer between 1 and 8, got ${JSON.stringify(count)}\n`);
    }
    const schemaProblem = checkSchema(config.responseSchema, 'generation_config.response_schema');
    if (schemaProblem) return schemaProblem;
    if (config.responseJsonSchema !== undefined) {
      // Documented: responseSchema must then be omitted, and responseMimeType is required.
      if (config.responseSchema !== undefined) return invalid('* GenerateContentRequest.generation_config.response_json_schema: response_schema must be omitted when response_json_schema is set\n');
      if (config.responseMimeType === undefined) return invalid('* GenerateContentRequest.generation_config.response_mime_type: response_mime_type is required when response_json_schema is set\n');
      const jsonProblem = checkJsonSchema(config.responseJsonSchema, 'generation_config.response_json_schema');
      if (jsonProblem) return jsonProblem;
    }
  }
  // Gemini checks each safety setting: an object naming a harm category and a threshold.
  const safety = body.safetySettings ?? body.safety_settings;
  if (safety !== undefined) {
    if (!Array.isArray(safety)) return invalid("Invalid value at 'safety_settings'");
    for (const [i, setting] of (safety as unknown[]).entries()) {
      if (!isRecord(setting) || typeof setting.category !== 'string' || typeof setting.threshold !== 'string') return invalid(`Invalid value at 'safety_settings[${i}]'`);
    }
  }
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return invalid("Invalid value at 'tools'");
    for (const [i, tool] of (body.tools as unknown[]).entries()) {
      if (!isRecord(tool)) return invalid(`Invalid value at 'tools[${i}]'`);
      for (const key of Object.keys(tool)) if (!['functionDeclarations', 'function_declarations', 'googleSearch', 'codeExecution'].includes(key)) return unknownField(key, `tools[${i}]`);
      const declarations = tool.functionDeclarations ?? tool.function_declarations ?? [];
      if (!Array.isArray(declarations)) return invalid(`Invalid value at 'tools[${i}].function_declarations'`);
      for (const [j, fn] of (declarations as unknown[]).entries()) {
        if (!isRecord(fn) || typeof fn.name !== 'string') return invalid(`* GenerateContentRequest.tools[${i}].function_declarations[${j}].name: Name cannot be empty.\n`);
        for (const key of Object.keys(fn)) if (!['name', 'description', 'parameters', 'parametersJsonSchema', 'response'].includes(key)) return unknownField(key, `tools[${i}].function_declarations[${j}]`);
        const problem = checkSchema(fn.parameters, `tools[${i}].function_declarations[${j}].parameters`);
        if (problem) return problem;
        if (fn.parametersJsonSchema !== undefined) {
          // Documented: mutually exclusive with parameters.
          if (fn.parameters !== undefined) return invalid(`* GenerateContentRequest.tools[${i}].function_declarations[${j}]: parameters and parameters_json_schema are mutually exclusive\n`);
          const jsonProblem = checkJsonSchema(fn.parametersJsonSchema, `tools[${i}].function_declarations[${j}].parameters_json_schema`);
          if (jsonProblem) return jsonProblem;
        }
        if (isRecord(fn.parameters) && fn.parameters.type === 'object' && !(isRecord(fn.parameters.properties) && Object.keys(fn.parameters.properties).length > 0)) {
          return invalid(`* GenerateContentRequest.tools[${i}].function_declarations[${j}].parameters.properties: should be non-empty for OBJECT type\n`);
        }
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------
// Answers

function tokens(text: string): number {
  return Math.max(1, Math.ceil(text.length / 4));
}

function partsText(parts: unknown): string {
  if (!Array.isArray(parts)) return '';
  return parts.map((part) => (isRecord(part) && typeof part.text === 'string' ? part.text : '')).join('');
}

interface Plan {
  /** The answer text, or a function call. */
  text: string | null;
  call: { name: string; args: Record<string, unknown> } | null;
  promptTokens: number;
  usage: UsageScript;
  /**
   * What the answer's candidate carries besides its content, as Gemini adds them: `groundingMetadata` when the
   * request enabled the Google Search tool, `safetyRatings` for the categories of the request's safetySettings.
   */
  extras: Record<string, unknown>;
}

/** The candidate fields a grounded or safety-rated answer carries (see Plan.extras), for the question asked. */
function candidateExtras(body: Record<string, any>, question: string): Record<string, unknown> {
  const extras: Record<string, unknown> = {};
  if ((body.tools ?? []).some((tool: any) => tool.googleSearch || tool.google_search)) {
    extras.groundingMetadata = {
      webSearchQueries: [question],
      searchEntryPoint: { renderedContent: '<style>.container{}</style><div class="container">Search suggestions</div>' },
      groundingChunks: [{ web: { uri: 'https://vertexaisearch.cloud.google.com/grounding-api-redirect/AbF9wXE', title: 'example.com' } }],
      groundingSupports: [{ segment: { startIndex: 0, endIndex: 4, text: 'echo' }, groundingChunkIndices: [0], confidenceScores: [0.91] }],
    };
  }
  const settings = body.safetySettings ?? body.safety_settings;
  if (Array.isArray(settings) && settings.length > 0) extras.safetyRatings = settings.map((setting: any) => ({ category: setting.category, probability: 'NEGLIGIBLE' }));
  return extras;
}

function planAnswer(body: Record<string, any>, usage: UsageScript): Plan {
  const contents = body.contents as Array<Record<string, any>>;
  const system = body.systemInstruction ?? body.system_instruction;
  const promptText = [partsText(system?.parts), ...contents.map((content) => partsText(content.parts) + JSON.stringify(content.parts.filter((p: any) => !p.text)))].join(' ');
  const promptTokens = tokens(promptText) + (usage.cachedContentTokenCount ?? 0);
  const last = contents[contents.length - 1] as Record<string, any>;
  const lastParts = last.parts as Array<Record<string, any>>;
  const result = lastParts.find((part) => part.functionResponse);
  const declarations: Array<Record<string, any>> = (body.tools ?? []).flatMap((tool: any) => tool.functionDeclarations ?? []);
  const calling = (body.toolConfig ?? body.tool_config)?.functionCallingConfig;
  // Mode ANY: "the model is constrained to always predict a function call", a function's response read or not.
  const forced = calling?.mode === 'ANY';
  // A function's response that asks to be called again ("call me again": a paged search) is called again.
  const again = result !== undefined && calling?.mode !== 'NONE' && /call me again/i.test(JSON.stringify(result.functionResponse.response));
  if (result && !((forced || again) && declarations.length > 0)) return { text: `result: ${JSON.stringify(result.functionResponse.response)}`, call: null, promptTokens, usage, extras: {} };
  const userText = partsText(lastParts);
  const extras = candidateExtras(body, userText);
  if (declarations.length > 0 && calling?.mode !== 'NONE' && (forced || again || /use the tool/i.test(userText))) {
    const name = (calling?.allowedFunctionNames?.[0] as string | undefined) ?? (declarations[0]?.name as string);
    return { text: null, call: { name, args: { query: userText, limit: 3 } }, promptTokens, usage, extras };
  }
  const media = lastParts.filter((part) => part.inlineData || part.fileData).map((part) => `[${(part.inlineData ?? part.fileData).mimeType}]`);
  return { text: `echo: ${[userText, ...media].filter(Boolean).join(' ')}`, call: null, promptTokens, usage, extras };
}

function usageMetadata(plan: Plan, candidates: number): Record<string, unknown> {
  const answer = plan.text !== null ? tokens(plan.text) : 8;
  const candidatesTokenCount = answer * candidates;
  const thoughts = plan.usage.thoughtsTokenCount ?? 0;
  const cached = plan.usage.cachedContentTokenCount ?? 0;
  return {
    promptTokenCount: plan.promptTokens,
    candidatesTokenCount,
    totalTokenCount: plan.promptTokens + candidatesTokenCount + thoughts,
    ...(cached ? { cachedContentTokenCount: cached, cacheTokensDetails: [{ modality: 'TEXT', tokenCount: cached }] } : {}),
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: plan.promptTokens }],
    ...(thoughts ? { thoughtsTokenCount: thoughts } : {}),
  };
}

function candidateCount(body: Record<string, any>): number {
  const n = (body.generationConfig ?? body.generation_config)?.candidateCount;
  return typeof n === 'number' && n > 1 ? n : 1;
}

function answerParts(plan: Plan): Record<string, unknown>[] {
  const parts: Record<string, unknown>[] = [];
  if (plan.usage.thoughtText) parts.push({ text: plan.usage.thoughtText, thought: true });
  if (plan.call) parts.push({ functionCall: plan.call, thoughtSignature: 'c2lnbmF0dXJlLW9mLXRoZS1jYWxs' });
  else parts.push({ text: plan.text });
  return parts;
}

function responseBody(plan: Plan, model: string, n: number, responseId: string): Record<string, unknown> {
  const candidates = Array.from({ length: n }, (_, index) => ({ content: { parts: answerParts(plan), role: 'model' }, finishReason: 'STOP', index, ...plan.extras }));
  return { candidates, usageMetadata: usageMetadata(plan, n), modelVersion: model, responseId };
}

/**
 * The answer as stream events: thought, then the text in three pieces (or the call whole), the last with finishReason.
 * With candidateCount above 1 every event carries each candidate's piece, each with its `index`, as Gemini streams them.
 */
function streamEvents(plan: Plan, model: string, responseId: string, n = 1): Record<string, unknown>[] {
  const pieces: Record<string, unknown>[][] = [];
  if (plan.usage.thoughtText) pieces.push([{ text: plan.usage.thoughtText, thought: true }]);
  if (plan.call) pieces.push([{ functionCall: plan.call, thoughtSignature: 'c2lnbmF0dXJlLW9mLXRoZS1jYWxs' }]);
  else {
    const text = plan.text ?? '';
    const third = Math.ceil(text.length / 3);
    for (let i = 0; i < text.length; i += third) pieces.push([{ text: text.slice(i, i + third) }]);
  }
  const final = usageMetadata(plan, n);
  const thoughts = plan.usage.thoughtsTokenCount ?? 0;
  return pieces.map((parts, i) => {
    const last = i === pieces.length - 1;
    // Before the last event the counts are running totals, as Gemini sends them: the prompt (its cached part
    // included) and the thoughts (done before any of the answer) from the first event on; the answer's own count
    // comes with the last.
    const thought = thoughts > 0;
    const usage = last
      ? final
      : {
          promptTokenCount: plan.promptTokens,
          totalTokenCount: plan.promptTokens + (thought ? thoughts : 0),
          ...(final.cachedContentTokenCount !== undefined ? { cachedContentTokenCount: final.cachedContentTokenCount, cacheTokensDetails: final.cacheTokensDetails } : {}),
          promptTokensDetails: final.promptTokensDetails,
          ...(thought ? { thoughtsTokenCount: thoughts } : {}),
        };
    const candidates = Array.from({ length: n }, (_, index) => ({ content: { parts, role: 'model' }, index, ...(last ? { finishReason: 'STOP', ...plan.extras } : {}) }));
    return { candidates, usageMetadata: usage, modelVersion: model, responseId };
  });
}

/** How many top candidates a request asked log probabilities for (generationConfig.logprobs), or null when it asked for none (responseLogprobs). */
function logprobsAsked(body: Record<string, any>): number | null {
  const config = body.generationConfig ?? body.generation_config;
  if (!isRecord(config) || config.responseLogprobs !== true) return null;
  return typeof config.logprobs === 'number' ? config.logprobs : 0;
}

/**
 * The response (or stream event) with each candidate's `logprobsResult`, as Gemini adds it when responseLogprobs is
 * set: a decoding step per token of the candidate's text (words here), its chosen candidate, and `top` candidates
 * per step (the chosen one first) when `logprobs` asked for some.
 */
function withLogprobs(response: Record<string, any>, top: number | null): Record<string, any> {
  if (top === null || !Array.isArray(response.candidates)) return response;
  const candidates = response.candidates.map((candidate: Record<string, any>) => {
    const text = (candidate.content?.parts ?? []).filter((part: any) => typeof part.text === 'string' && part.thought !== true).map((part: any) => part.text).join('');
    const tokens: string[] = text.match(/\S+\s*|\s+/g) ?? [];
    const chosen = tokens.map((token, i) => ({ token, tokenId: 1000 + i, logProbability: -0.25 * (i + 1) }));
    const topCandidates = chosen.map((pick) => ({
      candidates: Array.from({ length: top }, (_, k) => (k === 0 ? pick : { token: `alt${k}`, tokenId: 9000 + k, logProbability: pick.logProbability - k })),
    }));
    const sum = chosen.reduce((total, pick) => total + pick.logProbability, 0);
    return { ...candidate, logprobsResult: { topCandidates, chosenCandidates: chosen, logProbabilitySum: sum }, avgLogprobs: chosen.length === 0 ? 0 : sum / chosen.length };
  });
  return { ...response, candidates };
}

// ---------------------------------------------------------------------------------------------------------
// Embeddings (models.batchEmbedContents)

const EMBED_REQUEST_FIELDS = new Set(['model', 'content', 'taskType', 'task_type', 'title', 'outputDimensionality', 'output_dimensionality']);
const TASK_TYPES = new Set([
  'TASK_TYPE_UNSPECIFIED', 'RETRIEVAL_QUERY', 'RETRIEVAL_DOCUMENT', 'SEMANTIC_SIMILARITY', 'CLASSIFICATION', 'CLUSTERING', 'QUESTION_ANSWERING',
  'FACT_VERIFICATION', 'CODE_RETRIEVAL_QUERY',
]);
/** Gemini's batch limit; more requests are refused with a 400. */
export const MAX_EMBED_REQUESTS = 100;

/** The full vector size of an embedding model (gemini-embedding-001: 3072; text-embedding-004 and others: 768). */
export function embeddingModelDimensions(model: string): number {
  return model.startsWith('gemini-embedding') ? 3072 : 768;
}

/**
 * The batchEmbedContents checks Gemini makes that an adapter could get wrong. `model` is the model in the URL
 * (without `models/`). Returns the error body to answer with. The wording of the model-mismatch and
 * dimensionality messages is approximated; the others are Gemini's.
 */
export function validateGeminiEmbedRequest(body: unknown, model: string): GoogleErrorBody | null {
  if (!isRecord(body)) return invalid('Invalid JSON payload received. Expected an object.');
  for (const key of Object.keys(body)) if (key !== 'requests') return unknownField(key, null);
  const requests: unknown = body.requests;
  if (!Array.isArray(requests) || requests.length === 0) return invalid('* BatchEmbedContentsRequest.requests: requests is not specified\n');
  if (requests.length > MAX_EMBED_REQUESTS) return invalid(`* BatchEmbedContentsRequest.requests: at most ${MAX_EMBED_REQUESTS} requests can be in one batch\n`);
  for (const [i, request] of requests.entries()) {
    if (!isRecord(request)) return invalid(`Invalid value at 'requests[${i}]'`);
    for (const key of Object.keys(request)) if (!EMBED_REQUEST_FIELDS.has(key)) return unknownField(key, `requests[${i}]`);
    if (typeof request.model !== 'string' || request.model === '') return invalid(`* BatchEmbedContentsRequest.requests[${i}].model: unexpected model name format\n`);
    if (request.model !== `models/${model}`) {
      return invalid(`* BatchEmbedContentsRequest.requests[${i}].model: the model of each request must match the model of the batch (models/${model}), got ${request.model}\n`);
    }
    const content = request.content;
    if (!isRecord(content) || !Array.isArray(content.parts) || content.parts.length === 0) {
      return invalid(`* BatchEmbedContentsRequest.requests[${i}].content.parts: contents.parts must not be empty.\n`);
    }
    for (const [j, part] of (content.parts as unknown[]).entries()) {
      if (!isRecord(part)) return invalid(`Invalid value at 'requests[${i}].content.parts[${j}]'`);
      for (const key of Object.keys(part)) if (!PART_FIELDS.has(key)) return unknownField(key, `requests[${i}].content.parts[${j}]`);
      if (typeof part.text !== 'string' || part.text === '') return invalid('Unable to submit request because it has an empty text parameter. Add a value to the parameter and try again.');
    }
    const task = request.taskType ?? request.task_type;
    if (task !== undefined && (typeof task !== 'string' || !TASK_TYPES.has(task))) {
      return invalid(`Invalid value at 'requests[${i}].task_type' (type.googleapis.com/google.ai.generativelanguage.v1beta.TaskType), ${JSON.stringify(task)}`);
    }
    const dims = request.outputDimensionality ?? request.output_dimensionality;
    if (dims !== undefined) {
      if (!Number.isInteger(dims)) return invalid(`Invalid value at 'requests[${i}].output_dimensionality' (TYPE_INT32), ${JSON.stringify(dims)}`);
      if ((dims as number) < 1 || (dims as number) > embeddingModelDimensions(model)) {
        return invalid(`* BatchEmbedContentsRequest.requests[${i}].output_dimensionality: must be between 1 and ${embeddingModelDimensions(model)}\n`);
      }
    }
  }
  return null;
}

/**
 * A deterministic unit vector for a text (same text, same vector): sha256 of the text and a block counter,
 * read as 16-bit values mapped to [-1, 1], normalized over the model's full size. A smaller
 * outputDimensionality keeps the leading values without renormalizing, as Gemini's MRL truncation does.
 */
export function embeddingFor(text: string, fullDimensions: number, outputDimensions = fullDimensions): number[] {
  const raw: number[] = [];
  for (let block = 0; raw.length < fullDimensions; block++) {
    const digest = createHash('sha256').update(`${block}:${text}`).digest();
    for (let i = 0; i + 1 < digest.length && raw.length < fullDimensions; i += 2) raw.push(digest.readUInt16BE(i) / 32767.5 - 1);
  }
  const norm = Math.sqrt(raw.reduce((sum, v) => sum + v * v, 0)) || 1;
  // Rounded to float32 precision, which is what the API carries.
  return raw.slice(0, outputDimensions).map((v) => Math.fround(v / norm));
}

function embedAnswer(body: Record<string, any>, model: string, usage: UsageScript): Record<string, unknown> {
  const requests = body.requests as Array<Record<string, any>>;
  const full = embeddingModelDimensions(model);
  const embeddings = requests.map((request) => ({
    values: embeddingFor(partsText(request.content.parts), full, (request.outputDimensionality ?? request.output_dimensionality ?? full) as number),
  }));
  if (usage.omitEmbeddingUsage) return { embeddings };
  const promptTokenCount = requests.reduce((sum, request) => sum + tokens(partsText(request.content.parts)), 0);
  return { embeddings, usageMetadata: { promptTokenCount, promptTokenDetails: [{ modality: 'TEXT', tokenCount: promptTokenCount }] } };
}

// ---------------------------------------------------------------------------------------------------------
// Server

// Gemini serves its API under v1beta (the SDKs' default), v1 and v1alpha; `calls` records which was asked.
const ROUTE = /^\/v1(?:alpha|beta)?\/models\/([^/:]+):(generateContent|streamGenerateContent|batchEmbedContents)$/;
let responseCounter = 0;

class Upstream implements GeminiUpstream {
  readonly calls: GeminiCall[] = [];
  readonly streamed: Array<Record<string, any>[]> = [];
  url = '';
  private mode: GeminiMode = OK_MODE;
  private queue: GeminiMode[] = [];
  private usage: UsageScript = {};
  private readonly server: Server;

  constructor(private readonly apiKey: string | null) {
    this.server = createServer((req, res) => {
      const exchange = new LiveExchange(req, res, Date.now());
      res.on('close', () => exchange.markClosed());
      this.serve(exchange).catch(() => {
        if (!res.headersSent) this.send(exchange, 500, googleError(500, DEFAULT_MESSAGES[500] as string));
        else res.destroy();
      });
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  setMode(mode: GeminiMode): void {
    this.mode = mode;
  }

  enqueue(...modes: GeminiMode[]): void {
    this.queue.push(...modes);
  }

  setUsage(usage: UsageScript): void {
    this.usage = usage;
  }

  reset(): void {
    this.calls.length = 0;
    this.streamed.length = 0;
    this.queue = [];
    this.mode = OK_MODE;
    this.usage = {};
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private send(exchange: LiveExchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
    const text = JSON.stringify(body, null, 2);
    exchange.res.writeHead(status, { ...GOOGLE_HEADERS, 'content-type': JSON_TYPE, 'content-length': String(Buffer.byteLength(text)), ...headers });
    exchange.res.end(text);
  }

  private async serve(exchange: LiveExchange): Promise<void> {
    const { req } = exchange;
    const raw = (await readBody(req)).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://upstream');
    let body: unknown;
    let parseError: string | null = null;
    try {
      body = raw === '' ? undefined : JSON.parse(raw);
    } catch (err) {
      parseError = (err as Error).message;
    }
    this.calls.push({ method: req.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: req.headers, body, raw });

    const route = ROUTE.exec(url.pathname);
    if (!route || req.method !== 'POST') return this.notFoundPage(exchange.res, url.pathname);
    if (!this.authorized(exchange, req, url)) return;
    const [, model = '', method] = route;
    if (model.startsWith('missing')) {
      return this.send(exchange, 404, googleError(404, `models/${model} is not found for API version v1beta, or is not supported for ${method}. Call ListModels to see the list of available models and their supported methods.`));
    }
    const mode = this.queue.shift() ?? this.mode;
    if (mode.kind === 'reset') return exchange.reset();
    if (mode.kind === 'error') return this.scriptedError(exchange, mode);
    // A whole answer as given (a turn a test writes itself, event by event), after the request was recorded.
    if (mode.kind === 'raw') return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': JSON_TYPE }, mode.body);
    if (mode.kind === 'slow-headers' && !(await exchange.sleep(mode.delayMs))) return;
    if (parseError !== null) return this.send(exchange, 400, invalid(`Invalid JSON payload received. ${parseError}`));
    if (method === 'batchEmbedContents') {
      const embedProblem = validateGeminiEmbedRequest(body, model);
      if (embedProblem) return this.send(exchange, 400, embedProblem);
      const text = JSON.stringify(embedAnswer(body as Record<string, any>, model, this.usage), null, 2);
      // Chat-only modes (a blocked prompt, a failing stream) mean nothing here: those answer normally.
      const delivery: UpstreamMode = mode.kind === 'blocked' || mode.kind === 'stream-error' ? { kind: 'ok' } : mode;
      return deliverJson(exchange, { ...GOOGLE_HEADERS, 'content-type': JSON_TYPE }, text, delivery);
    }
    // Gemini reads a body it cannot make sense of as a bad request: a shape this scripted validation has no rule for
    // (a client's own body reaches it whole through native pass-through) gets the 400, never a crash here.
    let problem: GoogleErrorBody | null;
    try {
      problem = validateGeminiRequest(body) ?? outputLimitProblem(model, body);
      if (problem === null && isRecord(body) && method !== 'batchEmbedContents') planAnswer(body, this.usage);
    } catch {
      problem = invalid('Invalid JSON payload received. The request does not match GenerateContentRequest.');
    }
    if (problem) return this.send(exchange, 400, problem);

    const request = body as Record<string, any>;
    const responseId = `resp${++responseCounter}`;
    if (mode.kind === 'blocked') {
      const blocked = { promptFeedback: { blockReason: 'SAFETY', safetyRatings: [] }, usageMetadata: { promptTokenCount: 5, totalTokenCount: 5 }, modelVersion: model, responseId };
      return method === 'generateContent' ? this.send(exchange, 200, blocked) : this.sendEvents(exchange, [blocked], { kind: 'ok' }, url);
    }
    const plan = planAnswer(request, this.usage);
    const logprobs = logprobsAsked(request);
    if (method === 'generateContent') {
      const text = JSON.stringify(withLogprobs(responseBody(plan, model, candidateCount(request), responseId), logprobs), null, 2);
      return deliverJson(exchange, { ...GOOGLE_HEADERS, 'content-type': JSON_TYPE }, text, mode.kind === 'stream-error' ? { kind: 'ok' } : mode);
    }
    const events: unknown[] = streamEvents(plan, model, responseId, candidateCount(request)).map((event) => withLogprobs(event, logprobs));
    this.streamed.push(events as Record<string, any>[]);
    if (mode.kind === 'stream-error') {
      events.splice(mode.chunks, events.length, mode.error ? { error: mode.error } : googleError(500, DEFAULT_MESSAGES[500] as string));
      return this.sendEvents(exchange, events, { kind: 'ok' }, url, mode.together ?? 0);
    }
    return this.sendEvents(exchange, events, mode, url);
  }

  /**
   * `alt=sse` frames each chunk as `data: <json>\r\n\r\n`; without it the stream is one JSON array written piecewise.
   * The last `together` + 1 frames go in one write.
   */
  private sendEvents(exchange: LiveExchange, events: unknown[], mode: UpstreamMode, url: URL, together = 0): Promise<void> {
    const joined = (frames: string[]): string[] => (together > 0 ? [...frames.slice(0, -together - 1), frames.slice(-together - 1).join('')] : frames);
    if (url.searchParams.get('alt') === 'sse') {
      const frames = events.map((event) => `data: ${JSON.stringify(event)}\r\n\r\n`);
      return deliverStream(exchange, { ...GOOGLE_HEADERS, 'content-type': SSE_TYPE }, joined(frames), mode, 0);
    }
    const frames = events.map((event, i) => `${i === 0 ? '[' : ',\r\n'}${JSON.stringify(event)}${i === events.length - 1 ? ']' : ''}`);
    return deliverStream(exchange, { ...GOOGLE_HEADERS, 'content-type': JSON_TYPE }, joined(frames), mode, 0);
  }

  private authorized(exchange: LiveExchange, req: IncomingMessage, url: URL): boolean {
    if (this.apiKey === null) return true;
    const header = req.headers['x-goog-api-key'];
    const key = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('key');
    if (key === this.apiKey) return true;
    if (!key) {
      this.send(
        exchange,
        403,
        googleError(403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", 'PERMISSION_DENIED'),
      );
      return false;
    }
    const message = 'API key not valid. Please pass a valid API key.';
    this.send(
      exchange,
      400,
      googleError(400, message, 'INVALID_ARGUMENT', [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'API_KEY_INVALID', domain: 'googleapis.com', metadata: { service: 'generativelanguage.googleapis.com' } },
        { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message },
      ]),
    );
    return false;
  }

  private scriptedError(exchange: LiveExchange, mode: Extract<GeminiMode, { kind: 'error' }>): void {
    const message = mode.message ?? DEFAULT_MESSAGES[mode.status] ?? 'Unknown error.';
    const details: unknown[] = [];
    if (mode.status === 429) {
      details.push({
        '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
        violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests', quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier', quotaValue: '10' }],
      });
      details.push({ '@type': 'type.googleapis.com/google.rpc.Help', links: [{ description: 'Learn more about Gemini API quotas', url: 'https://ai.google.dev/gemini-api/docs/rate-limits' }] });
      if (mode.retryDelay) details.push({ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: mode.retryDelay });
    }
    if (mode.fieldViolations) details.push({ '@type': BAD_REQUEST, fieldViolations: mode.fieldViolations });
    this.send(exchange, mode.status, googleError(mode.status, message, mode.googleStatus, details.length ? details : undefined), mode.headers);
  }

  /** Google's front end answers unknown paths with an HTML 404 page, not a JSON error. */
  private notFoundPage(res: ServerResponse, path: string): void {
    const html = `<!DOCTYPE html>\n<html lang=en><title>Error 404 (Not Found)!!1</title><p><b>404.</b> <ins>That’s an error.</ins><p>The requested URL <code>${path}</code> was not found on this server.  <ins>That’s all we know.</ins>`;
    res.writeHead(404, { 'content-type': 'text/html; charset=UTF-8', 'content-length': String(Buffer.byteLength(html)) });
    res.end(html);
  }
}

export async function startGeminiUpstream(options: { apiKey?: string | null } = {}): Promise<GeminiUpstream> {
  const upstream = new Upstream(options.apiKey === undefined ? 'gemini-test-key' : options.apiKey);
  await upstream.listen();
  return upstream;
}
