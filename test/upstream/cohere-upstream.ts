// A scripted upstream that speaks Cohere's Chat API v2 (`POST /v2/chat`): bearer auth, Cohere's request
// validation (unknown fields are refused, so untranslated OpenAI fields show up as 400s), JSON answers and the
// typed SSE stream (`event: <type>` + `data: {...}`, message-end, then `data: [DONE]`), and Cohere's error
// bodies `{"id", "message"}`. The answer echoes the last user text, or calls the first tool. A reasoning model
// (`command-a-reasoning-*`) thinks first unless `thinking: {type: "disabled"}`: a `thinking` content part before
// the text (in a stream, its own content-start/-delta/-end block at index 0).
// Asked for `logprobs: true`, it answers each text chunk's log probabilities as Cohere documents them
// (docs.cohere.com/v2/reference/chat): a whole answer's top-level `logprobs`, a list of LogprobItem
// `{text, token_ids, logprobs}`, and in a stream each text content-delta event's own `logprobs` (one LogprobItem); no
// alternatives. See cohereLogprobItem for the scripted values.
// It also speaks the Embed API v2 (`POST /v2/embed`): Cohere's validation (required input_type, at most 96
// texts, output_dimension only on embed-v4), deterministic vectors derived from each text's hash, and the
// billed input tokens in `meta.billed_units`.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LiveExchange, readBody } from './exchange.js';
import { ScriptedServer } from './scripted-server.js';
import { deliverJson, deliverStream, OK_MODE, type UpstreamMode } from './modes.js';
import { splitTokens } from './openai-responses.js';
import { countWords } from './openai-request.js';
import { unitVectorOf } from './openai-embeddings.js';

export interface CohereCall {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface CohereUpstream {
  /** The Cohere base URL is `${url}/v2`. */
  url: string;
  calls: CohereCall[];
  setMode(mode: UpstreamMode): void;
  enqueue(...modes: UpstreamMode[]): void;
  /** Prompt tokens reported as `usage.cached_tokens` (Cohere's cache hits) from now on; 0 for none. */
  setCachedTokens(tokens: number): void;
  /**
   * From now on, text answers break off: half their tokens, then `finish_reason` ERROR or TIMEOUT (with `error` as a
   * stream's message-end `delta.error`) and the usage of what was generated, as Cohere ends a failed generation; null
   * for whole answers again.
   */
  setBrokenGeneration(failure: GenerationFailure | null): void;
  reset(): void;
  close(): Promise<void>;
}

export interface CohereUpstreamOptions {
  /** Requests must carry `Authorization: Bearer <apiKey>` (default `co-test-key`). */
  apiKey?: string;
  chunkDelayMs?: number;
}

type Json = Record<string, any>;

export interface GenerationFailure {
  reason: 'ERROR' | 'TIMEOUT';
  error?: string;
}

const KNOWN_FIELDS = new Set([
  'model', 'messages', 'stream', 'tools', 'strict_tools', 'documents', 'citation_options', 'response_format', 'safety_mode',
  'max_tokens', 'stop_sequences', 'temperature', 'seed', 'frequency_penalty', 'presence_penalty', 'k', 'p', 'logprobs',
  'tool_choice', 'thinking', 'priority',
]);

class Invalid extends Error {}

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.filter((part) => isRecord(part) && part.type === 'text').map((part: Json) => String(part.text)).join(' ');
}

function checkContentParts(content: unknown, where: string, allowed: string[]): void {
  if (typeof content === 'string') return;
  if (!Array.isArray(content)) throw new Invalid(`invalid request: ${where}.content must be a string or a list of content blocks`);
  for (const part of content) {
    if (!isRecord(part) || !allowed.includes(part.type)) throw new Invalid(`invalid request: ${where}.content: unsupported content type ${JSON.stringify(isRecord(part) ? part.type : part)}`);
    if (part.type === 'text' && typeof part.text !== 'string') throw new Invalid(`invalid request: ${where}.content: text must be a string`);
    if (part.type === 'image_url' && !(isRecord(part.image_url) && typeof part.image_url.url === 'string')) {
      throw new Invalid(`invalid request: ${where}.content: image_url.url must be a string`);
    }
  }
}

/** Validates the way Cohere does, as far as the gateway's translation can get it wrong. */
function validate(body: unknown): Json {
  if (!isRecord(body)) throw new Invalid('invalid request: body must be a JSON object');
  for (const field of Object.keys(body)) if (!KNOWN_FIELDS.has(field)) throw new Invalid(`invalid request: unknown field: parameter ${field} is not a valid field`);
  if (typeof body.model !== 'string' || body.model === '') throw new Invalid('invalid request: model must be specified');
  if (!Array.isArray(body.messages) || body.messages.length === 0) throw new Invalid('invalid request: messages cannot be empty');
  const callIds = new Set<string>();
  body.messages.forEach((message: unknown, i: number) => {
    const where = `messages[${i}]`;
    if (!isRecord(message)) throw new Invalid(`invalid request: ${where} must be an object`);
    switch (message.role) {
      case 'system':
        checkContentParts(message.content, where, ['text']);
        break;
      case 'user':
        checkContentParts(message.content, where, ['text', 'image_url', 'document']);
        break;
      case 'assistant':
        if (message.content !== undefined) checkContentParts(message.content, where, ['text', 'thinking']);
        for (const call of message.tool_calls ?? []) {
          if (!isRecord(call) || typeof call.id !== 'string' || call.type !== 'function' || !isRecord(call.function) || typeof call.function.arguments !== 'string') {
            throw new Invalid(`invalid request: ${where}.tool_calls: each tool call needs id, type function and function.arguments as a string`);
          }
          callIds.add(call.id);
        }
        break;
      case 'tool':
        if (typeof message.tool_call_id !== 'string' || !callIds.has(message.tool_call_id)) {
          throw new Invalid(`invalid request: ${where}.tool_call_id must refer to a tool call of an earlier assistant message`);
        }
        checkContentParts(message.content, where, ['text', 'document']);
        break;
      default:
        throw new Invalid(`invalid request: ${where}.role must be one of system, user, assistant, tool`);
    }
  });
  for (const tool of body.tools ?? []) {
    if (!isRecord(tool) || tool.type !== 'function' || !isRecord(tool.function) || typeof tool.function.name !== 'string') {
      throw new Invalid('invalid request: tools must be of type function with a function name');
    }
  }
  if (body.tool_choice !== undefined && body.tool_choice !== 'REQUIRED' && body.tool_choice !== 'NONE') {
    throw new Invalid('invalid request: tool_choice must be one of REQUIRED, NONE');
  }
  if (body.tool_choice !== undefined && !Array.isArray(body.tools)) throw new Invalid('invalid request: tool_choice requires tools');
  if (body.stop_sequences !== undefined && !(Array.isArray(body.stop_sequences) && body.stop_sequences.every((s: unknown) => typeof s === 'string'))) {
    throw new Invalid('invalid request: stop_sequences must be a list of strings');
  }
  if (body.max_tokens !== undefined && !(Number.isInteger(body.max_tokens) && body.max_tokens > 0)) throw new Invalid('invalid request: max_tokens must be a positive integer');
  // The documented ranges (docs.cohere.com/v2/reference/chat: p "min value of 0.01, max value of 0.99", the penalties
  // "min value of 0.0, max value of 1.0"); the wording of these errors is the scripted upstream's own.
  for (const [field, min, max] of [['p', 0.01, 0.99], ['frequency_penalty', 0, 1], ['presence_penalty', 0, 1]] as const) {
    const value = body[field];
    if (value !== undefined && !(typeof value === 'number' && value >= min && value <= max)) throw new Invalid(`invalid request: ${field} must be between ${min} and ${max}`);
  }
  if (body.logprobs !== undefined && typeof body.logprobs !== 'boolean') throw new Invalid('invalid request: logprobs must be a boolean');
  if (body.thinking !== undefined && !(isRecord(body.thinking) && ['enabled', 'disabled'].includes(body.thinking.type))) {
    throw new Invalid('invalid request: thinking.type must be one of enabled, disabled');
  }
  if (body.response_format !== undefined && !(isRecord(body.response_format) && ['text', 'json_object'].includes(body.response_format.type))) {
    throw new Invalid('invalid request: response_format.type must be one of text, json_object');
  }
  return body;
}

const EMBED_FIELDS = new Set(['model', 'texts', 'images', 'inputs', 'input_type', 'embedding_types', 'output_dimension', 'max_tokens', 'truncate', 'priority']);
const INPUT_TYPES = ['search_document', 'search_query', 'classification', 'clustering', 'image'];
const EMBEDDING_TYPES = ['float', 'int8', 'uint8', 'binary', 'ubinary', 'base64'];
export const COHERE_MAX_EMBED_TEXTS = 96;
const V4_DIMENSIONS = [256, 512, 1024, 1536];

/** Cohere's vector widths: embed-v4 is 1536 unless output_dimension says otherwise, light v3 models 384, v3 1024. */
export function cohereEmbedDimensions(model: string, outputDimension?: number): number {
  if (model.startsWith('embed-v4')) return outputDimension ?? 1536;
  return model.includes('light') ? 384 : 1024;
}

/** The scripted vectors (see unitVectorOf), exported so tests can check what reaches the client. */
export const cohereEmbedVector = unitVectorOf;

/** Input tokens Cohere bills for an embed call: here, the words of each text (at least one per text). */
export function cohereEmbedTokens(texts: string[]): number {
  return texts.reduce((sum, text) => sum + Math.max(1, countWords(text)), 0);
}

function packBits(vector: number[], signed: boolean): number[] {
  const out: number[] = [];
  for (let at = 0; at < vector.length; at += 8) {
    let byte = 0;
    for (let bit = 0; bit < 8; bit++) if ((vector[at + bit] ?? -1) > 0) byte |= 0x80 >> bit;
    out.push(signed ? byte - 128 : byte);
  }
  return out;
}

function encodeAs(type: string, vector: number[]): unknown {
  switch (type) {
    case 'int8':
      return vector.map((v) => Math.round(v * 127));
    case 'uint8':
      return vector.map((v) => Math.round(v * 127) + 128);
    case 'binary':
      return packBits(vector, true);
    case 'ubinary':
      return packBits(vector, false);
    case 'base64':
      return Buffer.from(new Float32Array(vector).buffer).toString('base64');
    default:
      return vector;
  }
}

/** Validates an embed request the way Cohere does, as far as the gateway's translation can get it wrong. */
function validateEmbed(body: unknown): Json {
  if (!isRecord(body)) throw new Invalid('invalid request: body must be a JSON object');
  for (const field of Object.keys(body)) if (!EMBED_FIELDS.has(field)) throw new Invalid(`invalid request: unknown field: parameter ${field} is not a valid field`);
  if (typeof body.model !== 'string' || body.model === '') throw new Invalid('invalid request: model must be specified');
  if (body.input_type === undefined) throw new Invalid('invalid request: input_type is required for embed models v3 and higher.');
  if (!INPUT_TYPES.includes(body.input_type)) throw new Invalid(`invalid request: input_type must be one of ${INPUT_TYPES.join(', ')}`);
  if (body.texts === undefined && body.images === undefined && body.inputs === undefined) throw new Invalid('invalid request: one of texts, images or inputs must be provided');
  if (body.texts !== undefined) {
    if (!Array.isArray(body.texts) || !body.texts.every((t: unknown) => typeof t === 'string')) throw new Invalid('invalid request: texts must be a list of strings');
    if (body.texts.length === 0) throw new Invalid('invalid request: texts must not be empty');
    if (body.texts.length > COHERE_MAX_EMBED_TEXTS) throw new Invalid(`invalid request: total number of texts must be at most ${COHERE_MAX_EMBED_TEXTS} - received ${body.texts.length}`);
  }
  if (body.images !== undefined || body.inputs !== undefined) throw new Invalid('invalid request: the scripted upstream embeds texts only');
  if (body.embedding_types !== undefined && !(Array.isArray(body.embedding_types) && body.embedding_types.length > 0 && body.embedding_types.every((t: unknown) => EMBEDDING_TYPES.includes(t as string)))) {
    throw new Invalid(`invalid request: embedding_types must be a list of ${EMBEDDING_TYPES.join(', ')}`);
  }
  if (body.output_dimension !== undefined) {
    if (!body.model.startsWith('embed-v4')) throw new Invalid(`invalid request: output_dimension is only supported for embed-v4.0 and newer models, not ${body.model}`);
    if (!V4_DIMENSIONS.includes(body.output_dimension)) throw new Invalid(`invalid request: ${String(body.output_dimension)} is not a valid output_dimension, must be one of ${V4_DIMENSIONS.join(', ')}`);
  }
  if (body.truncate !== undefined && !['NONE', 'START', 'END'].includes(body.truncate)) throw new Invalid('invalid request: truncate must be one of NONE, START, END');
  return body;
}

function embedJson(body: Json): { json: string; tokens: number } {
  const texts = body.texts as string[];
  const dimensions = cohereEmbedDimensions(body.model as string, body.output_dimension as number | undefined);
  const vectors = texts.map((text) => cohereEmbedVector(text, dimensions));
  const types = (body.embedding_types as string[] | undefined) ?? ['float'];
  const embeddings: Json = {};
  for (const type of types) embeddings[type] = vectors.map((vector) => encodeAs(type, vector));
  const tokens = cohereEmbedTokens(texts);
  const answer = {
    id: randomUUID(),
    embeddings,
    texts,
    meta: { api_version: { version: '2' }, billed_units: { input_tokens: tokens } },
    response_type: 'embeddings_by_type',
  };
  return { json: JSON.stringify(answer), tokens };
}

interface Plan {
  id: string;
  text: string[] | null;
  /** The reasoning model's thinking, or null. */
  thinking: string | null;
  tool: { id: string; name: string; plan: string; arguments: string } | null;
  finish: 'COMPLETE' | 'MAX_TOKENS' | 'STOP_SEQUENCE' | 'TOOL_CALL' | GenerationFailure['reason'];
  /** Cohere's words for a failed generation (a stream's message-end `delta.error`). */
  error?: string;
  usage: Json;
  /** Whether the request asked for `logprobs`. */
  logprobs: boolean;
}

function plan(body: Json, cachedTokens: number, failure: GenerationFailure | null = null): Plan {
  const messages = body.messages as Json[];
  const last = messages[messages.length - 1] as Json;
  let lastUser = '';
  let prompt = 0;
  let system = 0;
  for (const message of messages) {
    const words = countWords(textOf(message.content)) + 3;
    prompt += words;
    if (message.role === 'system') system += words;
    if (message.role === 'user') lastUser = textOf(message.content);
  }
  const wantsTool = Array.isArray(body.tools) && body.tools.length > 0 && last.role === 'user' && body.tool_choice !== 'NONE' &&
    (body.tool_choice === 'REQUIRED' || lastUser.includes('use the tool'));
  const usage = (output: number): Json => ({
    // Cohere bills less than it processes (its own preamble is free); here the system prompt is not billed.
    billed_units: { input_tokens: prompt - system, output_tokens: output },
    tokens: { input_tokens: prompt, output_tokens: output },
    ...(cachedTokens > 0 ? { cached_tokens: cachedTokens } : {}),
  });
  const id = randomUUID();
  const logprobs = body.logprobs === true;
  const reasons = String(body.model).startsWith('command-a-reasoning') && !(isRecord(body.thinking) && body.thinking.type === 'disabled');
  const thinking = reasons ? `thinking about: ${lastUser}` : null;
  const thought = thinking === null ? 0 : countWords(thinking);
  if (wantsTool) {
    const name = String(body.tools[0].function.name);
    const args = JSON.stringify({ query: lastUser });
    return { id, text: null, thinking, tool: { id: `${name}_${randomUUID().slice(0, 12)}`, name, plan: `I will use ${name}.`, arguments: args }, finish: 'TOOL_CALL', usage: usage(countWords(args) + thought), logprobs };
  }
  const source = last.role === 'tool' ? textOf(last.content) : lastUser;
  let text = isRecord(body.response_format) && body.response_format.type === 'json_object' ? JSON.stringify({ echo: source }) : `echo: ${source}`;
  let finish: Plan['finish'] = 'COMPLETE';
  for (const stop of (body.stop_sequences ?? []) as string[]) {
    const at = text.indexOf(stop);
    if (at !== -1) {
      text = text.slice(0, at);
      finish = 'STOP_SEQUENCE';
    }
  }
  let tokens = splitTokens(text);
  if (typeof body.max_tokens === 'number' && tokens.length > body.max_tokens) {
    tokens = tokens.slice(0, body.max_tokens);
    finish = 'MAX_TOKENS';
  }
  if (failure) {
    tokens = tokens.slice(0, Math.ceil(tokens.length / 2));
    return { id, text: tokens, thinking, tool: null, finish: failure.reason, ...(failure.error ? { error: failure.error } : {}), usage: usage(tokens.length + thought), logprobs };
  }
  return { id, text: tokens, thinking, tool: null, finish, usage: usage(tokens.length + thought), logprobs };
}

/**
 * The scripted LogprobItem of the text chunk `text`, the `at`-th of the answer: a chunk of more than 4 characters is
 * made of two tokens (so a chunk's log probability is the sum of its tokens'), a shorter one of one. Token ids and log
 * probabilities are derived from the position, so a test can compute what it should get.
 */
export function cohereLogprobItem(text: string, at: number): { text: string; token_ids: number[]; logprobs: number[] } {
  const count = text.length > 4 ? 2 : 1;
  const token_ids = Array.from({ length: count }, (_, i) => 1000 + at * 2 + i);
  const logprobs = Array.from({ length: count }, (_, i) => -(at + 1) / 8 - i / 16);
  return { text, token_ids, logprobs };
}

function responseJson(p: Plan): string {
  const message: Json = { role: 'assistant' };
  const thinking = p.thinking === null ? [] : [{ type: 'thinking', thinking: p.thinking }];
  if (p.tool) {
    message.tool_plan = p.tool.plan;
    message.tool_calls = [{ id: p.tool.id, type: 'function', function: { name: p.tool.name, arguments: p.tool.arguments } }];
    if (thinking.length > 0) message.content = thinking;
  } else message.content = [...thinking, { type: 'text', text: (p.text ?? []).join('') }];
  const logprobs = p.logprobs && p.text ? { logprobs: p.text.map((token, at) => cohereLogprobItem(token, at)) } : {};
  return JSON.stringify({ id: p.id, message, finish_reason: p.finish, usage: p.usage, ...logprobs });
}

const frame = (event: Json): string => `event: ${String(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;

function fragments(text: string, parts: number): string[] {
  const size = Math.max(1, Math.ceil(text.length / parts));
  const out: string[] = [];
  for (let at = 0; at < text.length; at += size) out.push(text.slice(at, at + size));
  return out;
}

function streamFrames(p: Plan): string[] {
  const frames = [frame({ id: p.id, type: 'message-start', delta: { message: { role: 'assistant', content: [], tool_plan: '', tool_calls: [], citations: [] } } })];
  const textIndex = p.thinking === null ? 0 : 1;
  if (p.thinking !== null) {
    frames.push(frame({ type: 'content-start', index: 0, delta: { message: { content: { type: 'thinking', thinking: '' } } } }));
    for (const token of splitTokens(p.thinking)) frames.push(frame({ type: 'content-delta', index: 0, delta: { message: { content: { thinking: token } } } }));
    frames.push(frame({ type: 'content-end', index: 0 }));
  }
  if (p.tool) {
    for (const word of splitTokens(p.tool.plan)) frames.push(frame({ type: 'tool-plan-delta', delta: { message: { tool_plan: word } } }));
    frames.push(frame({ type: 'tool-call-start', index: 0, delta: { message: { tool_calls: { id: p.tool.id, type: 'function', function: { name: p.tool.name, arguments: '' } } } } }));
    for (const piece of fragments(p.tool.arguments, 4)) frames.push(frame({ type: 'tool-call-delta', index: 0, delta: { message: { tool_calls: { function: { arguments: piece } } } } }));
    frames.push(frame({ type: 'tool-call-end', index: 0 }));
  } else {
    frames.push(frame({ type: 'content-start', index: textIndex, delta: { message: { content: { type: 'text', text: '' } } } }));
    (p.text ?? []).forEach((token, at) => {
      const logprobs = p.logprobs ? { logprobs: cohereLogprobItem(token, at) } : {};
      frames.push(frame({ type: 'content-delta', index: textIndex, delta: { message: { content: { text: token } } }, ...logprobs }));
    });
    frames.push(frame({ type: 'content-end', index: textIndex }));
  }
  frames.push(frame({ type: 'message-end', delta: { finish_reason: p.finish, ...(p.error ? { error: p.error } : {}), usage: p.usage } }));
  frames.push('data: [DONE]\n\n');
  return frames;
}

const DEFAULT_MESSAGES: Record<number, string> = {
  400: 'invalid request: the scripted upstream rejected this request',
  401: 'invalid api token',
  402: 'Please add or update your payment method at https://dashboard.cohere.com/billing?tab=payment to continue',
  404: "model 'unknown' not found, make sure the correct model ID was used and that you have access to the model.",
  422: 'invalid request: the request could not be processed',
  429: 'You are using a Trial key, which is limited to 20 API calls / minute. You can continue to use the Trial key for free or upgrade to a Production key with higher rate limits.',
  499: 'request cancelled',
  500: 'internal server error, this has been reported to our developers',
  503: 'service unavailable',
  504: 'the request timed out',
};

class ScriptedCohere extends ScriptedServer<UpstreamMode, CohereCall> implements CohereUpstream {
  private cachedTokens = 0;
  private brokenGeneration: GenerationFailure | null = null;

  constructor(private readonly options: CohereUpstreamOptions) {
    super(OK_MODE);
  }

  protected internalError(res: ServerResponse): void {
    this.sendError(res, 500, DEFAULT_MESSAGES[500] as string);
  }

  setCachedTokens(tokens: number): void {
    this.cachedTokens = tokens;
  }

  setBrokenGeneration(failure: GenerationFailure | null): void {
    this.brokenGeneration = failure;
  }

  override reset(): void {
    super.reset();
    this.cachedTokens = 0;
    this.brokenGeneration = null;
  }

  private sendError(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    const body = JSON.stringify({ id: randomUUID(), message });
    res.writeHead(status, { 'content-type': 'application/json', 'x-debug-trace-id': randomUUID(), ...headers, 'content-length': String(Buffer.byteLength(body)) });
    res.end(body);
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const exchange = new LiveExchange(req, res, Date.now());
    res.on('close', () => exchange.markClosed());
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = raw.length > 0 ? JSON.parse(raw.toString('utf8')) : undefined;
    } catch {
      body = undefined;
    }
    const path = (req.url ?? '/').split('?')[0] as string;
    this.calls.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    if (req.method !== 'POST' || (path !== '/v2/chat' && path !== '/v2/embed')) return this.sendError(res, 404, `no route for ${req.method ?? ''} ${path}`);
    if (req.headers.authorization !== `Bearer ${this.options.apiKey ?? 'co-test-key'}`) return this.sendError(res, 401, DEFAULT_MESSAGES[401] as string);

    const mode = this.nextMode();
    if (mode.kind === 'error') {
      const extra: Record<string, string> = mode.status === 429 ? { 'retry-after': '1' } : {};
      return this.sendError(res, mode.status, mode.message ?? DEFAULT_MESSAGES[mode.status] ?? `status ${mode.status}`, { ...extra, ...mode.headers });
    }
    if (mode.kind === 'reset') return exchange.reset();
    if (mode.kind === 'slow-headers' && !(await exchange.sleep(mode.delayMs))) return;
    if (body === undefined) return this.sendError(res, 400, 'invalid request: could not parse the request body as JSON');
    if (path === '/v2/embed') return this.embed(exchange, body, mode);
    let request: Json;
    try {
      request = validate(body);
    } catch (err) {
      if (err instanceof Invalid) return this.sendError(res, 400, err.message);
      throw err;
    }
    const answer = plan(request, this.cachedTokens, this.brokenGeneration);
    const headers = { 'x-debug-trace-id': randomUUID(), num_tokens: String(answer.usage.tokens.input_tokens + answer.usage.tokens.output_tokens) };
    if (request.stream === true) {
      return deliverStream(exchange, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers }, streamFrames(answer), mode, this.options.chunkDelayMs ?? 0);
    }
    return deliverJson(exchange, { 'content-type': 'application/json', ...headers }, responseJson(answer), mode);
  }

  private async embed(exchange: LiveExchange, body: unknown, mode: UpstreamMode): Promise<void> {
    let request: Json;
    try {
      request = validateEmbed(body);
    } catch (err) {
      if (err instanceof Invalid) return this.sendError(exchange.res, 400, err.message);
      throw err;
    }
    const answer = embedJson(request);
    return deliverJson(exchange, { 'content-type': 'application/json', 'x-debug-trace-id': randomUUID(), num_tokens: String(answer.tokens) }, answer.json, mode);
  }
}

export async function startCohereUpstream(options: CohereUpstreamOptions = {}): Promise<CohereUpstream> {
  const upstream = new ScriptedCohere(options);
  await upstream.listen();
  return upstream;
}

/** Raw stream frames for a scripted answer, for decoder unit tests. */
export function cohereStreamFixture(body: Json, cachedTokens = 0): string[] {
  return streamFrames(plan(validate(body), cachedTokens));
}
