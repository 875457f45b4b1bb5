// A scripted upstream that speaks the OpenAI Chat Completions wire format, for e2e tests and as the benchmark
// baseline. Run directly (`tsx test/upstream/openai-upstream.ts --port 9100`) it serves until SIGTERM/SIGINT.
import { realpathSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { LiveExchange, readBody } from './exchange.js';
import { answerEmbeddings } from './openai-embeddings.js';
import { deliverHugeBody, deliverLongStream, deliverJson, deliverStream, modeFromModel, OK_MODE, type UpstreamMode } from './modes.js';
import { authError, defaultErrorFor, INVALID_JSON_MESSAGE, invalidRequest, invalidUrl } from './openai-errors.js';
import { newRequestId, RateLimitWindow, standardHeaders } from './openai-headers.js';
import { isRecord, parseChatRequest } from './openai-request.js';
import { randomAlphanumeric } from './random-ids.js';
import { brokenJson, completionJson, MODELS_JSON, planCompletion, streamFrames, type StreamFlavor } from './openai-responses.js';
import { magistralFrames, magistralJson } from './mistral-thinking.js';
import { vendorEmbeddingsRefusal, vendorEmbeddingsView, vendorRefusal, vendorView, type Vendor } from './vendor-refusals.js';
import { checkCompactRequest, checkInputTokensRequest, checkResponsesRequest, compactedResponse, inputTokensOf, planResponse, responseFrames } from './openai-responses-api.js';
import { JSON_TYPE, sendError, sendJson, sendRaw, sendScriptedError, SSE_HEADERS } from './respond.js';
import { vendorKeyRefusal } from './vendor-key-refusals.js';
import { answerLegacyCompletions } from './openai-completions-api.js';

export type { UpstreamMode } from './modes.js';

export interface RecordedCall {
  method: string;
  path: string;
  /** The query as sent, without its `?` ('' when none). */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or undefined when the body was empty or not JSON. */
  body: any;
  /** The body exactly as received (JSON.parse rounds big numbers; this does not). */
  raw?: string;
  /** Becomes true if the client closed the connection before the server finished the response. */
  closedByClient: boolean;
  /** The server wrote the whole response. */
  finished: boolean;
}

export interface ScriptedUpstream {
  /** e.g. http://127.0.0.1:PORT (https:// when started with `tls`); the OpenAI-style base URL is `${url}/v1`. */
  url: string;
  port: number;
  /** Every request received, in order (empty when record is off). */
  calls: RecordedCall[];
  /** What the Responses API answered, in order: the Response, and for a stream the SSE frames as written. */
  responses: Array<{ response: Record<string, any>; frames: string[] | null }>;
  /** The compactions answered (POST /v1/responses/compact), as sent, while `record` is on. */
  compactions: Array<Record<string, any>>;
  /** Default mode for later requests. */
  setMode(mode: UpstreamMode): void;
  /** One-shot modes used by the next chat completion requests, FIFO, before the model-name and default modes. */
  enqueue(...modes: UpstreamMode[]): void;
  /** Clears calls and queue, and puts the default mode back to ok. */
  reset(): void;
  /** Resolves true when that call's connection was closed by the client, false on timeout or a finished response. */
  waitForClose(callIndex: number, timeoutMs?: number): Promise<boolean>;
  /** Drops keep-alive connections with no request in flight, so a client's pool is back to nothing (soak: fd counts). */
  closeIdleConnections(): void;
  close(): Promise<void>;
}

export interface UpstreamOptions {
  port?: number;
  host?: string;
  /** When a string, requests must carry `Authorization: Bearer <apiKey>`, else 401 invalid_api_key. */
  apiKey?: string | null;
  /** Delay between streamed chunks (default 0). */
  chunkDelayMs?: number;
  /** Whose stream to send: OpenAI's (default), or Groq's (usage only in the final chunk's `x_groq.usage`). */
  streamFlavor?: StreamFlavor;
  /** Refuse, in the vendor's words, the chat and embeddings requests that vendor refuses and OpenAI takes (vendor-refusals.ts). */
  vendor?: Vendor;
  /** Record calls (default true); benchmarks turn it off. */
  record?: boolean;
  /** Serve HTTPS with this key and certificate (PEM) instead of plain HTTP; the URL is then https://. */
  tls?: { key: Buffer | string; cert: Buffer | string };
}

type CloseWaiter = (closedByClient: boolean) => void;


function queryOf(url: string | undefined): string {
  const query = url?.indexOf('?') ?? -1;
  return query === -1 || !url ? '' : url.slice(query + 1);
}

function pathOf(url: string | undefined): string {
  if (!url) return '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match?.[1] ?? null;
}

class OpenAIUpstream implements ScriptedUpstream {
  readonly calls: RecordedCall[] = [];
  readonly responses: ScriptedUpstream['responses'] = [];
  readonly compactions: ScriptedUpstream['compactions'] = [];
  /** The ids of the Responses kept (answered without store: false) and of their reasoning items, which a later request may name. */
  private readonly storedResponses = new Set<string>();
  /** The Responses kept, by id, as GET /v1/responses/{id} answers them (DELETE forgets one). */
  private readonly keptResponses = new Map<string, Record<string, unknown>>();
  url = '';
  port = 0;
  private mode: UpstreamMode = OK_MODE;
  private queue: UpstreamMode[] = [];
  private readonly waiters = new Map<number, Set<CloseWaiter>>();
  private readonly live = new Set<LiveExchange>();
  private readonly rateLimits = new RateLimitWindow();
  private readonly server: Server | TlsServer;
  private readonly scheme: 'http' | 'https';
  private readonly apiKey: string | null;
  private readonly record: boolean;
  private readonly chunkDelayMs: number;
  private readonly streamFlavor: StreamFlavor;
  private readonly vendor: Vendor | null;
  /** Bumped by reset() so late events of older calls never touch the new call list. */
  private generation = 0;
  private shuttingDown = false;

  constructor(options: UpstreamOptions) {
    this.apiKey = options.apiKey ?? null;
    this.record = options.record ?? true;
    this.chunkDelayMs = options.chunkDelayMs ?? 0;
    this.streamFlavor = options.streamFlavor ?? (options.vendor === 'mistral' ? 'mistral' : 'openai');
    this.vendor = options.vendor ?? null;
    const handler = (req: IncomingMessage, res: ServerResponse) => this.handle(req, res);
    this.scheme = options.tls ? 'https' : 'http';
    this.server = options.tls
      ? createTlsServer({ keepAlive: true, noDelay: true, key: options.tls.key, cert: options.tls.cert }, handler)
      : createServer({ keepAlive: true, noDelay: true }, handler);
    // Longer than client pools' idle timeouts so the client, not the server, retires idle connections.
    this.server.keepAliveTimeout = 65_000;
  }

  async listen(port: number, host: string): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    this.port = (this.server.address() as AddressInfo).port;
    const reachable = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
    this.url = `${this.scheme}://${reachable}:${this.port}`;
  }

  setMode(mode: UpstreamMode): void {
    this.mode = mode;
  }

  enqueue(...modes: UpstreamMode[]): void {
    this.queue.push(...modes);
  }

  reset(): void {
    this.calls.length = 0;
    this.responses.length = 0;
    this.compactions.length = 0;
    this.queue = [];
    this.mode = OK_MODE;
    this.generation++;
    this.settleAllWaiters();
  }

  waitForClose(callIndex: number, timeoutMs = 5_000): Promise<boolean> {
    const call = this.calls[callIndex];
    if (call?.closedByClient) return Promise.resolve(true);
    if (call?.finished) return Promise.resolve(false);
    return new Promise((resolve) => {
      const set = this.waiters.get(callIndex) ?? new Set<CloseWaiter>();
      this.waiters.set(callIndex, set);
      const waiter: CloseWaiter = (closed) => {
        clearTimeout(timer);
        set.delete(waiter);
        resolve(closed);
      };
      const timer = setTimeout(() => waiter(false), timeoutMs);
      set.add(waiter);
    });
  }

  closeIdleConnections(): void {
    this.server.closeIdleConnections();
  }

  async close(): Promise<void> {
    this.shuttingDown = true;
    for (const exchange of this.live) exchange.markClosed();
    this.settleAllWaiters();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      // Stalled streams would otherwise keep close() waiting forever.
      this.server.closeAllConnections();
    });
  }

  private settleAllWaiters(): void {
    for (const set of this.waiters.values()) for (const waiter of [...set]) waiter(false);
    this.waiters.clear();
  }

  private notify(callIndex: number, closedByClient: boolean): void {
    const set = this.waiters.get(callIndex);
    if (!set) return;
    for (const waiter of [...set]) waiter(closedByClient);
    this.waiters.delete(callIndex);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const exchange = new LiveExchange(req, res, Date.now());
    this.live.add(exchange);
    const call = this.record ? this.recordCall(req) : null;
    const generation = this.generation;
    const index = this.calls.length - 1;
    // The call this exchange may still update: none once reset() started a new generation of calls.
    const tracked = () => (generation === this.generation ? call : null);
    res.on('finish', () => {
      exchange.finished = true;
      const recorded = tracked();
      if (!recorded) return;
      recorded.finished = true;
      this.notify(index, false);
    });
    res.on('close', () => {
      this.live.delete(exchange);
      exchange.markClosed();
      const recorded = tracked();
      if (!recorded || exchange.finished) return;
      const byClient = !exchange.serverAborted && !this.shuttingDown;
      recorded.closedByClient = byClient;
      this.notify(index, byClient);
    });
    this.serve(exchange, call).catch(() => {
      // Usually the client went away mid-body and nobody is left to answer; otherwise fail like OpenAI would.
      if (!res.headersSent && !res.destroyed) return sendError(exchange, 500, defaultErrorFor(500, 'unknown'));
      exchange.serverAborted = true;
      res.destroy();
    });
  }

  private recordCall(req: IncomingMessage): RecordedCall {
    const call: RecordedCall = { method: req.method ?? 'GET', path: pathOf(req.url), query: queryOf(req.url), headers: req.headers, body: undefined, closedByClient: false, finished: false };
    this.calls.push(call);
    return call;
  }

  private async serve(exchange: LiveExchange, call: RecordedCall | null): Promise<void> {
    const { req } = exchange;
    const raw = await readBody(req);
    if (call) call.raw = raw.toString('utf8');
    let body: unknown;
    let jsonOk = raw.length > 0;
    try {
      if (jsonOk) body = JSON.parse(raw.toString('utf8'));
    } catch {
      jsonOk = false;
    }
    if (call) call.body = body;

    const method = req.method ?? 'GET';
    const path = pathOf(req.url);
    const chat = path === '/v1/chat/completions' && method === 'POST';
    const models = path === '/v1/models' && method === 'GET';
    const embeddings = path === '/v1/embeddings' && method === 'POST';
    const responses = path === '/v1/responses' && method === 'POST';
    // OpenAI's input token count of a Responses request (`client.responses.inputTokens.count`).
    if (path === '/v1/responses/input_tokens' && method === 'POST') {
      if (!this.authorized(exchange)) return;
      const problem = checkInputTokensRequest(jsonOk ? body : undefined, this.storedResponses);
      if (problem) return sendError(exchange, 400, invalidRequest(problem));
      return sendJson(exchange, 200, JSON.stringify({ object: 'response.input_tokens', input_tokens: inputTokensOf(body as Record<string, unknown>) }));
    }
    // OpenAI's compaction (`client.responses.compact`): the scripted error modes apply as for the Responses API.
    if (path === '/v1/responses/compact' && method === 'POST') {
      if (!this.authorized(exchange)) return;
      const mode = this.queue.shift() ?? modeFromModel(isRecord(body) ? body.model : undefined) ?? this.mode;
      if (mode.kind === 'error') return sendScriptedError(exchange, mode, isRecord(body) && typeof body.model === 'string' ? body.model : 'gpt-5');
      if (mode.kind === 'reset') return exchange.reset();
      if (mode.kind === 'raw') return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': JSON_TYPE }, mode.body);
      const problem = checkCompactRequest(jsonOk ? body : undefined, this.storedResponses);
      if (problem) return sendError(exchange, 400, invalidRequest(problem));
      const compacted = compactedResponse(body as Record<string, unknown>);
      if (this.record) this.compactions.push(compacted);
      return sendRaw(exchange, 200, { 'content-type': JSON_TYPE, ...standardHeaders(newRequestId(), exchange.startedAt), ...this.rateLimits.consume(compacted.usage.total_tokens) }, JSON.stringify(compacted));
    }
    // OpenAI's legacy Completions API (openai-completions-api.ts); DeepSeek serves it (FIM) under its beta base URL.
    if ((path === '/v1/completions' || path === '/beta/completions') && method === 'POST') {
      if (!this.authorized(exchange)) return;
      const mode = this.queue.shift() ?? modeFromModel(isRecord(body) ? body.model : undefined) ?? this.mode;
      return answerLegacyCompletions(exchange, jsonOk ? body : undefined, mode, { owner: this.record ? this : null, chunkDelayMs: this.chunkDelayMs, consume: (tokens) => this.rateLimits.consume(tokens) });
    }
    const kept = /^\/v1\/responses\/([^/]+)$/.exec(path);
    if (kept && (method === 'GET' || method === 'DELETE')) {
      if (!this.authorized(exchange)) return;
      const id = kept[1] as string;
      const response = this.keptResponses.get(id);
      if (!response) return sendError(exchange, 404, { message: `Response with id '${id}' not found.`, type: 'invalid_request_error', param: null, code: null });
      if (method === 'GET') return sendJson(exchange, 200, JSON.stringify(response));
      this.keptResponses.delete(id);
      this.storedResponses.delete(id);
      return sendJson(exchange, 200, JSON.stringify({ id, object: 'response', deleted: true }));
    }
    if (!chat && !models && !embeddings && !responses) return sendError(exchange, 404, invalidUrl(method, path));
    if (!this.authorized(exchange)) return;
    if (models) return sendJson(exchange, 200, MODELS_JSON);
    if (embeddings) return this.answerEmbeddings(exchange, jsonOk ? body : undefined);
    if (responses) return this.answerResponses(exchange, jsonOk ? body : undefined);

    const model = isRecord(body) ? body.model : undefined;
    const mode = this.queue.shift() ?? modeFromModel(model) ?? this.mode;
    return this.answerChat(exchange, mode, jsonOk ? body : undefined, jsonOk);
  }

  /** Embeddings honour scripted error modes, resets and raw bodies; the other modes shape streams and do not apply. */
  private answerEmbeddings(exchange: LiveExchange, body: unknown): void {
    const mode = this.queue.shift() ?? this.mode;
    if (mode.kind === 'error') return sendScriptedError(exchange, mode, 'text-embedding-3-small');
    if (mode.kind === 'reset') return exchange.reset();
    if (mode.kind === 'raw') return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': JSON_TYPE }, mode.body);
    const refusal = this.vendor ? vendorEmbeddingsRefusal(this.vendor, body) : null;
    if (refusal) return sendRaw(exchange, refusal.status, { 'content-type': JSON_TYPE }, refusal.body);
    const result = answerEmbeddings(this.vendor ? vendorEmbeddingsView(this.vendor, body) : body);
    if (!result.ok) return sendError(exchange, 400, invalidRequest(result.problem));
    sendRaw(exchange, 200, { 'content-type': JSON_TYPE, ...this.rateLimits.consume(1) }, result.json);
  }

  /** The Responses API (openai-responses-api.ts): the scripted error modes, resets and raw bodies apply as for chat. */
  private answerResponses(exchange: LiveExchange, body: unknown): Promise<void> | void {
    const model = isRecord(body) ? body.model : undefined;
    const mode = this.queue.shift() ?? modeFromModel(model) ?? this.mode;
    if (mode.kind === 'error') return sendScriptedError(exchange, mode, typeof model === 'string' ? model : 'gpt-5');
    if (mode.kind === 'reset') return exchange.reset();
    if (mode.kind === 'raw') return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': JSON_TYPE }, mode.body);
    const problem = checkResponsesRequest(body, this.storedResponses);
    if (problem) return sendError(exchange, 400, invalidRequest(problem));
    const plan = planResponse(body as Record<string, any>, mode.kind === 'reply' ? mode.pieces : null);
    if ((body as Record<string, unknown>).store !== false) {
      this.storedResponses.add(plan.response.id as string);
      this.keptResponses.set(plan.response.id as string, plan.response);
      for (const item of plan.response.output as Array<Record<string, unknown>>) if (item.type === 'reasoning') this.storedResponses.add(String(item.id));
    }
    const headers = { ...standardHeaders(newRequestId(), exchange.startedAt), ...this.rateLimits.consume(plan.response.usage.total_tokens) };
    const stream = (body as Record<string, unknown>).stream === true;
    const frames = stream ? responseFrames(plan) : null;
    if (this.record) this.responses.push({ response: plan.response, frames });
    if (frames) return deliverStream(exchange, { ...SSE_HEADERS, ...headers }, frames, mode, this.chunkDelayMs);
    return deliverJson(exchange, { 'content-type': JSON_TYPE, ...headers }, JSON.stringify(plan.response), mode);
  }

  private authorized(exchange: LiveExchange): boolean {
    if (this.apiKey === null) return true;
    const token = bearerToken(exchange.req.headers.authorization);
    if (token === this.apiKey) return true;
    const refusal = vendorKeyRefusal(this.vendor, token);
    if (refusal) sendJson(exchange, refusal.status, refusal.body);
    else sendError(exchange, 401, authError(token));
    return false;
  }

  private async answerChat(exchange: LiveExchange, mode: UpstreamMode, body: unknown, jsonOk: boolean): Promise<void> {
    const model = isRecord(body) && typeof body.model === 'string' ? body.model : 'gpt-4o-mini';
    switch (mode.kind) {
      case 'reset':
        return exchange.reset();
      case 'error':
        return sendScriptedError(exchange, mode, model);
      case 'huge-body':
        return deliverHugeBody(exchange, isRecord(body) && body.stream === true, mode);
      case 'long-stream':
        return deliverLongStream(exchange, mode);
      case 'raw':
        return sendRaw(exchange, mode.status, mode.headers ?? { 'content-type': JSON_TYPE }, mode.body);
      case 'bad-json': {
        const stream = isRecord(body) && body.stream === true;
        return sendRaw(exchange, 200, stream ? SSE_HEADERS : { 'content-type': JSON_TYPE }, brokenJson(stream));
      }
      case 'slow-headers':
        if (!(await exchange.sleep(mode.delayMs))) return;
        break;
      default:
        break;
    }

    if (!jsonOk) return sendError(exchange, 400, invalidRequest({ message: INVALID_JSON_MESSAGE, param: null, code: null }));
    const refusal = this.vendor ? vendorRefusal(this.vendor, body) : null;
    if (refusal) return sendRaw(exchange, refusal.status, { 'content-type': JSON_TYPE }, refusal.body);
    const parsed = parseChatRequest(this.vendor ? vendorView(this.vendor, body) : body);
    if (!parsed.ok) return sendError(exchange, 400, invalidRequest(parsed.problem));

    const completion = planCompletion(parsed.request, mode.kind === 'reply' ? mode.pieces : null);
    if (mode.kind === 'usage') completion.usage = mode.usage as unknown as typeof completion.usage;
    // Mistral names its tool calls with nine letters and digits, the only ids it takes back (vendor-refusals.ts).
    if (this.vendor === 'mistral') for (const answer of completion.answers) if (answer.kind === 'tool') answer.callId = randomAlphanumeric(9);
    const headers = {
      ...standardHeaders(newRequestId(), exchange.startedAt),
      ...this.rateLimits.consume(completion.usage.total_tokens),
    };
    if (mode.kind === 'reply' && mode.thinking && this.vendor === 'mistral') {
      if (parsed.request.stream) return deliverStream(exchange, { ...SSE_HEADERS, ...headers }, magistralFrames(completion, mode.thinking), mode, this.chunkDelayMs);
      return deliverJson(exchange, { 'content-type': JSON_TYPE, ...headers }, magistralJson(completion, mode.thinking), mode);
    }
    if (parsed.request.stream) {
      return deliverStream(exchange, { ...SSE_HEADERS, ...headers }, streamFrames(completion, this.streamFlavor), mode, this.chunkDelayMs);
    }
    return deliverJson(exchange, { 'content-type': JSON_TYPE, ...headers }, completionJson(completion), mode);
  }
}

export async function startOpenAIUpstream(options: UpstreamOptions = {}): Promise<ScriptedUpstream> {
  const upstream = new OpenAIUpstream(options);
  await upstream.listen(options.port ?? 0, options.host ?? '127.0.0.1');
  return upstream;
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (!entry) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(entry)).href;
  } catch {
    return false;
  }
}

/** Standalone mode for benchmarks: no recording, no auth, scripting only through model names. */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { port: { type: 'string' }, host: { type: 'string' }, 'chunk-delay-ms': { type: 'string' } },
    allowPositionals: false,
  });
  const upstream = await startOpenAIUpstream({
    port: Number(values.port ?? 0),
    host: values.host ?? '127.0.0.1',
    chunkDelayMs: Number(values['chunk-delay-ms'] ?? 0),
    apiKey: null,
    record: false,
  });
  console.log(`listening ${upstream.url}`);
  const stop = () => {
    void upstream.close().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

if (isEntryPoint()) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
