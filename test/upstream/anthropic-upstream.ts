// A scripted upstream that speaks Anthropic's Messages API (POST /v1/messages): it checks requests the way
// Anthropic does (x-api-key, anthropic-version, max_tokens, user/assistant roles only, no unknown top-level
// fields) and answers in Anthropic's JSON and SSE shapes, so a test through it proves the adapter translates.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LiveExchange, readBody } from './exchange.js';
import { deliverJson, deliverStream, OK_MODE, type UpstreamMode } from './modes.js';
import { randomAlphanumeric } from './random-ids.js';

/** The shared modes, plus an `error` event sent inside an open stream after `after` frames. */
export type AnthropicMode = UpstreamMode | { kind: 'stream-error'; after: number; type?: string; message?: string };

export interface RecordedCall {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export interface AnthropicUpstream {
  url: string;
  calls: RecordedCall[];
  setMode(mode: AnthropicMode): void;
  /** One-shot modes for the next /v1/messages requests, FIFO, before the default mode. */
  enqueue(...modes: AnthropicMode[]): void;
  /** Cache tokens reported in every later answer's usage (Anthropic reports them beside input_tokens). */
  setCacheTokens(read: number, write: number): void;
  reset(): void;
  close(): Promise<void>;
}

export interface AnthropicUpstreamOptions {
  /** When a string, requests must carry `x-api-key: <apiKey>`. */
  apiKey?: string | null;
}

type Json = Record<string, any>;

const TOP_LEVEL = new Set([
  'model', 'messages', 'max_tokens', 'system', 'metadata', 'stop_sequences', 'stream', 'temperature', 'top_p', 'top_k',
  'tools', 'tool_choice', 'thinking', 'output_config', 'service_tier', 'container', 'mcp_servers',
]);
const IMAGE_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);
const BLOCK_TYPES = new Set(['text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking']);
const DEFAULT_ERRORS: Record<number, [string, string]> = {
  400: ['invalid_request_error', 'Invalid request.'],
  401: ['authentication_error', 'invalid x-api-key'],
  403: ['permission_error', 'Your API key does not have permission to use the specified resource.'],
  404: ['not_found_error', 'Not found'],
  413: ['request_too_large', 'Request exceeds the maximum allowed number of bytes.'],
  429: ['rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit'],
  500: ['api_error', 'Internal server error'],
  529: ['overloaded_error', 'Overloaded'],
};

function isRecord(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function requestId(): string {
  return `req_${randomAlphanumeric(24)}`;
}

export function errorBody(type: string, message: string): string {
  return JSON.stringify({ type: 'error', error: { type, message }, request_id: requestId() });
}

function countTokens(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** The text of a message's content, or of its tool results (what an echo answers). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((block: Json) => (block.type === 'text' ? block.text : block.type === 'tool_result' ? `tool said ${textOf(block.content)}` : ''))
    .filter(Boolean)
    .join(' ');
}

// ---------------------------------------------------------------------------------------------------------
// Validation, in Anthropic's words.

function checkBlock(block: unknown, where: string): string | null {
  if (!isRecord(block) || typeof block.type !== 'string') return `${where}: Input should be a valid dictionary or object to extract fields from`;
  if (!BLOCK_TYPES.has(block.type)) return `${where}.type: Input tag '${String(block.type)}' found using 'type' does not match any of the expected tags`;
  if (block.type === 'text' && (typeof block.text !== 'string' || block.text === '')) return `${where}: text content blocks must be non-empty`;
  if (block.type === 'image') {
    const source = block.source;
    if (!isRecord(source)) return `${where}.source: Field required`;
    if (source.type === 'base64' && !IMAGE_TYPES.has(source.media_type)) return `${where}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
    if (source.type === 'base64' && typeof source.data !== 'string') return `${where}.source.base64.data: Field required`;
    if (source.type === 'url' && typeof source.url !== 'string') return `${where}.source.url.url: Field required`;
    if (source.type !== 'base64' && source.type !== 'url') return `${where}.source: Input tag '${String(source.type)}' found using 'type' does not match any of the expected tags`;
  }
  if (block.type === 'tool_use' && (typeof block.id !== 'string' || typeof block.name !== 'string' || !isRecord(block.input))) return `${where}: tool_use blocks need id, name and an object input`;
  if (block.type === 'tool_result' && typeof block.tool_use_id !== 'string') return `${where}.tool_use_id: Field required`;
  return null;
}

/** The first problem Anthropic would report for this body, or null. */
export function validate(body: unknown): string | null {
  if (!isRecord(body)) return 'Input should be a valid dictionary';
  for (const key of Object.keys(body)) if (!TOP_LEVEL.has(key)) return `${key}: Extra inputs are not permitted`;
  if (typeof body.model !== 'string') return 'model: Field required';
  if (body.max_tokens === undefined) return 'max_tokens: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Input should be greater than or equal to 1';
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  if (body.messages.length === 0) return 'messages: at least one message is required';
  let toolBlocks = false;
  for (const [i, message] of body.messages.entries()) {
    if (!isRecord(message)) return `messages.${i}: Input should be a valid dictionary`;
    if (message.role !== 'user' && message.role !== 'assistant') return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    if (typeof message.content === 'string') continue;
    if (!Array.isArray(message.content)) return `messages.${i}.content: Input should be a valid list`;
    for (const [j, block] of message.content.entries()) {
      const problem = checkBlock(block, `messages.${i}.content.${j}`);
      if (problem) return problem;
      if (block.type === 'tool_use' || block.type === 'tool_result') toolBlocks = true;
      if (block.type === 'tool_use' && message.role !== 'assistant') return `messages.${i}.content.${j}: tool_use blocks are only allowed in assistant messages`;
      if (block.type === 'tool_result' && message.role !== 'user') return `messages.${i}.content.${j}: tool_result blocks are only allowed in user messages`;
    }
  }
  if (typeof body.temperature === 'number' && (body.temperature < 0 || body.temperature > 1)) return 'temperature: Input should be less than or equal to 1';
  if (body.stop_sequences !== undefined && !Array.isArray(body.stop_sequences)) return 'stop_sequences: Input should be a valid list';
  if (body.metadata !== undefined && (!isRecord(body.metadata) || Object.keys(body.metadata).some((k) => k !== 'user_id'))) return 'metadata: Extra inputs are not permitted';
  if (body.tools !== undefined) {
    if (!Array.isArray(body.tools)) return 'tools: Input should be a valid list';
    for (const [i, tool] of body.tools.entries()) {
      if (!isRecord(tool) || typeof tool.name !== 'string') return `tools.${i}.name: Field required`;
      if (!isRecord(tool.input_schema) || tool.input_schema.type !== 'object') return `tools.${i}.input_schema: Field required`;
      if ('function' in tool || 'parameters' in tool) return `tools.${i}: Extra inputs are not permitted`;
    }
  } else if (toolBlocks) return 'Requests which include `tool_use` or `tool_result` blocks must define tools.';
  if (body.tool_choice !== undefined && (!isRecord(body.tool_choice) || !['auto', 'any', 'tool', 'none'].includes(body.tool_choice.type))) {
    return "tool_choice: Input should be a valid dictionary with type 'auto', 'any', 'tool' or 'none'";
  }
  if (body.thinking?.type === 'enabled') {
    const budget = body.thinking.budget_tokens;
    if (!Number.isInteger(budget) || budget < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (budget >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------
// Answers.

interface Plan {
  message: Json;
  /** Tool input JSON split into the fragments a stream sends. */
  toolFragments: string[];
}

function plan(body: Json, cache: { read: number; write: number }): Plan {
  const last = body.messages.at(-1) as Json;
  const lastText = last.role === 'user' ? textOf(last.content) : '';
  const tools: Json[] = Array.isArray(body.tools) ? body.tools : [];
  const choice = body.tool_choice as Json | undefined;
  const forced = choice?.type === 'any' || choice?.type === 'tool';
  const callTool = tools.length > 0 && choice?.type !== 'none' && (forced || /use the tool/i.test(lastText)) && !textOf(last.content).startsWith('tool said');
  const content: Json[] = [];
  if (body.thinking?.type === 'enabled') content.push({ type: 'thinking', thinking: `thinking about: ${lastText}`, signature: `sig_${randomAlphanumeric(16)}` });
  let stopReason = 'end_turn';
  let stopSequence: string | null = null;
  let toolFragments: string[] = [];
  if (callTool) {
    const name = choice?.type === 'tool' ? choice.name : tools[0]?.name;
    const input = { query: lastText, units: 'metric' };
    const json = JSON.stringify(input);
    toolFragments = [json.slice(0, 5), json.slice(5, 17), json.slice(17)];
    content.push({ type: 'tool_use', id: `toolu_${randomAlphanumeric(24)}`, name, input });
    stopReason = 'tool_use';
  } else {
    let text = `echo: ${lastText}`;
    for (const stop of (body.stop_sequences ?? []) as string[]) {
      const at = text.indexOf(stop);
      if (at >= 0) {
        text = text.slice(0, at);
        stopReason = 'stop_sequence';
        stopSequence = stop;
      }
    }
    const words = text.split(' ');
    if (words.length > body.max_tokens) {
      text = words.slice(0, body.max_tokens).join(' ');
      stopReason = 'max_tokens';
    }
    content.push({ type: 'text', text });
  }
  const prompt = [textOf(body.system ?? ''), ...body.messages.map((m: Json) => textOf(m.content))].join(' ');
  const output = content.reduce((sum, block) => sum + countTokens(block.text ?? block.thinking ?? JSON.stringify(block.input ?? '')), 0);
  const message = {
    id: `msg_${randomAlphanumeric(24)}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content,
    stop_reason: stopReason,
    stop_sequence: stopSequence,
    usage: { input_tokens: Math.max(1, countTokens(prompt)), cache_creation_input_tokens: cache.write, cache_read_input_tokens: cache.read, output_tokens: Math.max(1, output) },
  };
  return { message, toolFragments };
}

function frame(type: string, data: Json): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
}

/** The exact event sequence Anthropic streams for a message. */
export function streamFrames({ message, toolFragments }: Plan): string[] {
  const frames = [frame('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...message.usage, output_tokens: 1 } } })];
  (message.content as Json[]).forEach((block, index) => {
    if (block.type === 'text') {
      frames.push(frame('content_block_start', { index, content_block: { type: 'text', text: '' } }));
      if (index === 0) frames.push(frame('ping', {}));
      for (const piece of (block.text as string).match(/\S*\s*/g)?.filter(Boolean) ?? ['']) {
        frames.push(frame('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }));
      }
    } else if (block.type === 'thinking') {
      frames.push(frame('content_block_start', { index, content_block: { type: 'thinking', thinking: '' } }));
      if (index === 0) frames.push(frame('ping', {}));
      frames.push(frame('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: block.thinking } }));
      frames.push(frame('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } }));
    } else {
      frames.push(frame('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } }));
      if (index === 0) frames.push(frame('ping', {}));
      frames.push(frame('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: '' } }));
      for (const part of toolFragments) frames.push(frame('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } }));
    }
    frames.push(frame('content_block_stop', { index }));
  });
  frames.push(frame('message_delta', { delta: { stop_reason: message.stop_reason, stop_sequence: message.stop_sequence }, usage: { output_tokens: message.usage.output_tokens } }));
  frames.push(frame('message_stop', {}));
  return frames;
}

// ---------------------------------------------------------------------------------------------------------
// The server.

class Server implements AnthropicUpstream {
  readonly calls: RecordedCall[] = [];
  url = '';
  private mode: AnthropicMode = OK_MODE;
  private queue: AnthropicMode[] = [];
  private cache = { read: 0, write: 0 };
  private remaining = 1000;
  private readonly server = createServer((req, res) => this.handle(req, res));

  constructor(private readonly apiKey: string | null) {}

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  setMode(mode: AnthropicMode): void {
    this.mode = mode;
  }

  enqueue(...modes: AnthropicMode[]): void {
    this.queue.push(...modes);
  }

  setCacheTokens(read: number, write: number): void {
    this.cache = { read, write };
  }

  reset(): void {
    this.calls.length = 0;
    this.queue = [];
    this.mode = OK_MODE;
    this.cache = { read: 0, write: 0 };
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const exchange = new LiveExchange(req, res, Date.now());
    res.on('close', () => exchange.markClosed());
    this.serve(exchange).catch(() => {
      if (!res.headersSent) this.send(exchange, 500, errorBody('api_error', 'Internal server error'));
      else res.destroy();
    });
  }

  private headers(): Record<string, string> {
    this.remaining = Math.max(0, this.remaining - 1);
    return {
      'request-id': requestId(),
      'anthropic-ratelimit-requests-limit': '1000',
      'anthropic-ratelimit-requests-remaining': String(this.remaining),
      'anthropic-ratelimit-requests-reset': new Date(Date.now() + 60_000).toISOString(),
    };
  }

  private send(exchange: LiveExchange, status: number, body: string, extra: Record<string, string> = {}): void {
    exchange.res.writeHead(status, { ...this.headers(), 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...extra });
    exchange.res.end(body);
  }

  private async serve(exchange: LiveExchange): Promise<void> {
    const { req } = exchange;
    const raw = (await readBody(req)).toString('utf8');
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    this.calls.push({ method: req.method ?? 'GET', path, headers: req.headers, body });
    if (req.method !== 'POST' || path !== '/v1/messages') return this.send(exchange, 404, errorBody('not_found_error', `${req.method} ${path} not found`));
    const key = req.headers['x-api-key'];
    if (typeof key !== 'string' || key === '') return this.send(exchange, 401, errorBody('authentication_error', 'x-api-key header is required'));
    if (this.apiKey !== null && key !== this.apiKey) return this.send(exchange, 401, errorBody('authentication_error', 'invalid x-api-key'));
    if (typeof req.headers['anthropic-version'] !== 'string') return this.send(exchange, 400, errorBody('invalid_request_error', 'anthropic-version: header is required'));

    const mode = this.queue.shift() ?? this.mode;
    if (mode.kind === 'reset') return exchange.reset();
    if (mode.kind === 'error') {
      const [type, message] = DEFAULT_ERRORS[mode.status] ?? ['api_error', 'Internal server error'];
      const limited: Record<string, string> = mode.status === 429 ? { 'retry-after': '1', 'anthropic-ratelimit-requests-remaining': '0' } : {};
      return this.send(exchange, mode.status, errorBody(mode.type ?? type, mode.message ?? message), { ...limited, ...mode.headers });
    }
    if (mode.kind === 'slow-headers' && !(await exchange.sleep(mode.delayMs))) return;
    if (body === undefined) return this.send(exchange, 400, errorBody('invalid_request_error', 'There was an issue with the format of your request: the body is not valid JSON'));
    const problem = validate(body);
    if (problem) return this.send(exchange, 400, errorBody('invalid_request_error', problem));

    const answer = plan(body as Json, this.cache);
    const stream = (body as Json).stream === true;
    if (mode.kind === 'bad-json') return this.send(exchange, 200, stream ? 'event: message_start\ndata: {"type":"message_st' : '{"id":"msg_', stream ? { 'content-type': 'text/event-stream' } : {});
    const headers = { ...this.headers(), 'content-type': stream ? 'text/event-stream; charset=utf-8' : 'application/json' };
    if (!stream) return deliverJson(exchange, headers, JSON.stringify(answer.message), mode as UpstreamMode);
    let frames = streamFrames(answer);
    if (mode.kind === 'stream-error') {
      frames = [...frames.slice(0, mode.after), `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: mode.type ?? 'overloaded_error', message: mode.message ?? 'Overloaded' } })}\n\n`];
      return deliverStream(exchange, headers, frames, OK_MODE, 0);
    }
    return deliverStream(exchange, headers, frames, mode, 0);
  }
}

export async function startAnthropicUpstream(options: AnthropicUpstreamOptions = {}): Promise<AnthropicUpstream> {
  const server = new Server(options.apiKey ?? null);
  await server.listen();
  return server;
}
