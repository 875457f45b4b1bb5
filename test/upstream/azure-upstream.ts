// A scripted upstream for Azure OpenAI (`POST /openai/deployments/{deployment}/chat/completions?api-version=`)
// and Azure AI Foundry model inference (`POST /models/chat/completions?api-version=`). The body, answers and
// stream are OpenAI's (built by the OpenAI upstream's builders); what is Azure's own is checked and sent here:
// the `api-key` header, the `api-version` query, deployments, `{"error":{"code","message"}}` error bodies,
// content-filter annotations and the stream's opening prompt_filter_results chunk.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LiveExchange, readBody } from './exchange.js';
import { ScriptedServer } from './scripted-server.js';
import { deliverJson, deliverStream, OK_MODE, type UpstreamMode } from './modes.js';
import { isRecord, parseChatRequest } from './openai-request.js';
import { answerEmbeddings } from './openai-embeddings.js';
import { completionJson, planCompletion, streamFrames } from './openai-responses.js';
import { vendorRefusal } from './vendor-refusals.js';
import { checkCompactRequest, checkResponsesRequest, compactedResponse, planResponse, responseFrames } from './openai-responses-api.js';

export interface AzureCall {
  method: string;
  path: string;
  /** The `api-version` query parameter, null when absent. */
  apiVersion: string | null;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /**
   * Azure AI Foundry: the body as the model got it, after the `extra-parameters` header had its say (fields outside the
   * model inference API's spec dropped, or passed through); undefined when the service refused the request for them.
   */
  modelBody?: any;
}

export interface AzureUpstream {
  url: string;
  calls: AzureCall[];
  setMode(mode: UpstreamMode): void;
  enqueue(...modes: UpstreamMode[]): void;
  /** Prompt tokens reported as `prompt_tokens_details.cached_tokens` from now on. */
  setCachedTokens(tokens: number): void;
  /**
   * From now on the completion's content filter blocks the answer for this harm category (severity medium), as Azure
   * does: a whole answer without content, a stream cut by a last chunk carrying the filter's results; null: none.
   */
  filterOutput(category: string | null): void;
  reset(): void;
  close(): Promise<void>;
}

export interface AzureUpstreamOptions {
  apiKey?: string;
  /**
   * Microsoft Entra ID: the resource takes only `Authorization: Bearer <token>` (key auth disabled, as tenants'
   * `disableLocalAuth` policy does), each token judged here; an `api-key` is refused.
   */
  acceptsBearer?: (token: string) => boolean;
  /** Azure OpenAI deployments: deployment name -> the model it serves. */
  deployments?: Record<string, string>;
  /** Models Azure AI Foundry serves by name. */
  foundryModels?: string[];
}

/** The fields of the model inference API's spec (chat completions, embeddings); any other is an extra parameter. */
const FOUNDRY_FIELDS: Record<'chat' | 'embeddings', ReadonlySet<string>> = {
  chat: new Set(['model', 'messages', 'frequency_penalty', 'presence_penalty', 'temperature', 'top_p', 'max_tokens', 'response_format', 'stop', 'stream', 'stream_options', 'tools', 'tool_choice', 'seed', 'modalities']),
  embeddings: new Set(['model', 'input', 'dimensions', 'encoding_format', 'input_type']),
};

/**
 * What Azure AI Foundry does with a body's extra parameters, as its `extra-parameters` header says: `pass-through`
 * gives them to the model, `drop` leaves them out, and `error` (also what no header means) refuses the request.
 */
function foundryExtras(body: Record<string, unknown>, operation: 'chat' | 'embeddings', header: string | undefined): { body: Record<string, unknown> } | { status: number; code: string; message: string } {
  const extras = Object.keys(body).filter((key) => !FOUNDRY_FIELDS[operation].has(key));
  const behaviour = header ?? 'error';
  if (behaviour === 'pass-through' || extras.length === 0) return { body };
  if (behaviour === 'drop') return { body: Object.fromEntries(Object.entries(body).filter(([key]) => FOUNDRY_FIELDS[operation].has(key))) };
  if (behaviour !== 'error') return { status: 400, code: 'BadRequest', message: `Invalid value for extra-parameters: '${behaviour}'. Expected one of 'pass-through', 'drop', 'error'.` };
  return {
    status: 400,
    code: 'Invalid input',
    message: `Extra parameters [${extras.map((key) => `'${key}'`).join(', ')}] are not allowed when extra-parameters is not set or set to be 'error'. Set extra-parameters to 'pass-through' to pass to the model.`,
  };
}

const SAFE = { hate: { filtered: false, severity: 'safe' }, self_harm: { filtered: false, severity: 'safe' }, sexual: { filtered: false, severity: 'safe' }, violence: { filtered: false, severity: 'safe' } };

const MESSAGES: Record<number, { code: string; message: string }> = {
  400: { code: 'BadRequest', message: 'The scripted upstream rejected this request.' },
  401: { code: '401', message: 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.' },
  404: { code: 'DeploymentNotFound', message: 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.' },
  429: {
    code: '429',
    message: 'Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second.',
  },
  500: { code: 'InternalServerError', message: 'The server had an error while processing your request. Sorry about that!' },
  503: { code: 'ServiceUnavailable', message: 'The service is temporarily unable to process your request. Please try again later.' },
};

function errorBody(status: number, mode: { code?: string | null; message?: string }): string {
  const base = MESSAGES[status] ?? { code: String(status), message: `The scripted upstream answered ${status}.` };
  const code = mode.code ?? base.code;
  const error: Record<string, unknown> = { code, message: mode.message ?? base.message };
  if (code === 'content_filter') {
    // Azure's prompt-filter rejection: OpenAI's fields plus `status` and `innererror`.
    Object.assign(error, {
      message: mode.message ?? "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
      type: null,
      param: 'prompt',
      status: 400,
      // The prompt filter's result names the prompt shield (jailbreak) beside the four harm categories.
      innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { ...SAFE, jailbreak: { filtered: false, detected: false }, violence: { filtered: true, severity: 'high' } } },
    });
  }
  return JSON.stringify({ error });
}

class ScriptedAzure extends ScriptedServer<UpstreamMode, AzureCall> implements AzureUpstream {
  private cachedTokens = 0;
  private filteredCategory: string | null = null;
  private readonly deployments: Record<string, string>;
  private readonly foundryModels: Set<string>;
  /** The Responses kept on the v1 API (answered without store: false), by id, as GET .../responses/{id} answers them. */
  private readonly keptResponses = new Map<string, Record<string, unknown>>();

  constructor(private readonly options: AzureUpstreamOptions) {
    super(OK_MODE);
    this.deployments = options.deployments ?? { 'gpt-4o-prod': 'gpt-4o-2024-08-06' };
    this.foundryModels = new Set(options.foundryModels ?? ['Phi-4', 'Mistral-Large-2411']);
  }

  protected internalError(res: ServerResponse): void {
    this.sendError(res, 500, {});
  }

  setCachedTokens(tokens: number): void {
    this.cachedTokens = tokens;
  }

  filterOutput(category: string | null): void {
    this.filteredCategory = category;
  }

  override reset(): void {
    super.reset();
    this.cachedTokens = 0;
    this.filteredCategory = null;
  }

  private sendError(res: ServerResponse, status: number, mode: { code?: string | null; message?: string }, headers: Record<string, string> = {}): void {
    const body = errorBody(status, mode);
    res.writeHead(status, { 'content-type': 'application/json', 'apim-request-id': randomUUID(), ...headers, 'content-length': String(Buffer.byteLength(body)) });
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
    const url = new URL(req.url ?? '/', 'http://azure');
    const apiVersion = url.searchParams.get('api-version');
    this.calls.push({ method: req.method ?? 'GET', path: url.pathname, apiVersion, headers: req.headers, body });

    // A Response the v1 API kept: read or deleted by id (with the resource's key), as OpenAI's API does.
    const kept = /^\/openai\/v1\/responses\/([^/]+)$/.exec(url.pathname);
    if (kept && (req.method === 'GET' || req.method === 'DELETE')) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const allowed = this.options.acceptsBearer ? bearer !== undefined && this.options.acceptsBearer(bearer) : req.headers['api-key'] === (this.options.apiKey ?? 'azure-test-key');
      if (!allowed) return this.sendError(res, 401, {});
      const id = decodeURIComponent(kept[1] as string);
      const response = this.keptResponses.get(id);
      if (!response) return this.sendError(res, 404, { code: null, message: `Response with id '${id}' not found.` });
      if (req.method === 'DELETE') this.keptResponses.delete(id);
      res.writeHead(200, { 'content-type': 'application/json', 'apim-request-id': randomUUID() });
      return void res.end(JSON.stringify(req.method === 'GET' ? response : { id, object: 'response', deleted: true }));
    }
    // The v1 API (`/openai/v1/...`): OpenAI's paths, the deployment named by the body's model, no dated api-version.
    const v1 = /^\/openai\/v1\/(chat\/completions|embeddings|responses|responses\/compact)$/.exec(url.pathname);
    const route = v1 ? null : (/^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(url.pathname) ?? /^\/models\/(chat\/completions|embeddings)$/.exec(url.pathname));
    const v1Model = v1 && isRecord(body) && typeof body.model === 'string' ? body.model : undefined;
    const deployment = v1 ? (v1Model !== undefined ? encodeURIComponent(v1Model) : undefined) : url.pathname.startsWith('/openai/') ? route?.[1] : undefined;
    const foundry = url.pathname.startsWith('/models/') && route !== null;
    const matched = v1 ?? route;
    const embeddings = matched?.[matched.length - 1] === 'embeddings';
    if (req.method !== 'POST' || (!v1 && !deployment && !foundry)) return this.sendError(res, 404, { code: '404', message: 'Resource not found' });
    if (this.options.acceptsBearer) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (req.headers['api-key'] !== undefined) return this.sendError(res, 401, { code: 'AuthenticationTypeDisabled', message: 'Key based authentication is disabled for this resource.' });
      if (bearer === undefined || !this.options.acceptsBearer(bearer)) {
        return this.sendError(res, 401, { code: 'PermissionDenied', message: 'Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.' });
      }
    } else if (req.headers['api-key'] !== (this.options.apiKey ?? 'azure-test-key')) return this.sendError(res, 401, {});
    if (v1) {
      if (apiVersion !== null && apiVersion !== 'preview' && apiVersion !== 'latest') return this.sendError(res, 400, { code: 'BadRequest', message: `API version not supported` });
      if (!deployment) return this.sendError(res, 400, { code: 'BadRequest', message: 'model is required.' });
    } else if (!apiVersion) return this.sendError(res, 404, { code: '404', message: 'Resource not found' });
    // A dated API version takes the fields of its own spec only: reasoning_effort arrived in 2024-12-01-preview.
    if (!v1 && deployment && isRecord(body) && body.reasoning_effort !== undefined && apiVersion !== null && apiVersion.slice(0, 10) < '2024-12-01') {
      return this.sendError(res, 400, { code: null, message: 'Unrecognized request argument supplied: reasoning_effort' });
    }

    let servedModel: string;
    if (deployment) {
      const model = this.deployments[decodeURIComponent(deployment)];
      if (!model) return this.sendError(res, 404, {});
      servedModel = model;
      // Azure OpenAI takes the model from the deployment; a model in the body is ignored.
      if (isRecord(body)) body = { ...body, model };
    } else {
      const model = isRecord(body) ? body.model : undefined;
      if (typeof model !== 'string' || !this.foundryModels.has(model)) return this.sendError(res, 400, { code: 'unknown_model', message: `Unknown model: ${String(model)}` });
      servedModel = model;
      const header = req.headers['extra-parameters'];
      const given = foundryExtras(body as Record<string, unknown>, embeddings ? 'embeddings' : 'chat', Array.isArray(header) ? header[0] : header);
      if (!('body' in given)) return this.sendError(res, given.status, given);
      body = given.body;
      (this.calls.at(-1) as AzureCall).modelBody = body;
    }

    // A deployment answers for its model as OpenAI does: a chat model (gpt-4o, gpt-4.1) refuses reasoning_effort.
    const refusal = deployment && !embeddings && isRecord(body) ? vendorRefusal('openai', { ...body, model: servedModel }) : null;
    if (refusal) {
      res.writeHead(refusal.status, { 'content-type': 'application/json', 'apim-request-id': randomUUID() });
      return void res.end(refusal.body);
    }

    const mode = this.nextMode();
    if (mode.kind === 'error') {
      const extra: Record<string, string> = mode.status === 429 ? { 'retry-after': '1', 'retry-after-ms': '1000', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-remaining-tokens': '0' } : {};
      return this.sendError(res, mode.status, mode, { ...extra, ...mode.headers });
    }
    if (mode.kind === 'raw') {
      res.writeHead(mode.status, { 'content-type': 'application/json', 'apim-request-id': randomUUID(), ...mode.headers });
      return void res.end(mode.body);
    }
    if (mode.kind === 'reset') return exchange.reset();
    if (mode.kind === 'slow-headers' && !(await exchange.sleep(mode.delayMs))) return;
    if (body === undefined) return this.sendError(res, 400, { code: 'BadRequest', message: 'Request body must be valid JSON.' });
    if (matched?.[1] === 'responses/compact') {
      // Compaction on the v1 API, as OpenAI's (openai-responses-api.ts).
      const problem = checkCompactRequest(body);
      if (problem) return this.sendError(res, 400, { code: problem.code ?? 'BadRequest', message: problem.message });
      return deliverJson(exchange, { 'content-type': 'application/json', 'apim-request-id': randomUUID() }, JSON.stringify(compactedResponse(body as Record<string, any>)), mode);
    }
    if (matched?.[1] === 'responses') {
      // The Responses API on the v1 API: OpenAI's request, answer and stream (openai-responses-api.ts).
      const problem = checkResponsesRequest(body);
      if (problem) return this.sendError(res, 400, { code: problem.code ?? 'BadRequest', message: problem.message });
      const plan = planResponse(body as Record<string, any>);
      if ((body as Record<string, unknown>).store !== false) this.keptResponses.set(plan.response.id as string, plan.response);
      const headers = { 'apim-request-id': randomUUID(), 'x-ms-region': 'Sweden Central' };
      if ((body as Record<string, unknown>).stream === true) return deliverStream(exchange, { 'content-type': 'text/event-stream; charset=utf-8', ...headers }, responseFrames(plan), mode, 0);
      return deliverJson(exchange, { 'content-type': 'application/json', ...headers }, JSON.stringify(plan.response), mode);
    }
    if (embeddings) {
      const answer = answerEmbeddings(body);
      if (!answer.ok) return this.sendError(res, 400, { code: 'BadRequest', message: answer.problem.message });
      return deliverJson(exchange, { 'content-type': 'application/json', 'apim-request-id': randomUUID() }, answer.json, mode);
    }
    const parsed = parseChatRequest(body);
    if (!parsed.ok) return this.sendError(res, 400, { code: parsed.problem.code ?? 'BadRequest', message: parsed.problem.message });

    const completion = planCompletion({ ...parsed.request, model: servedModel });
    if (this.cachedTokens > 0) completion.usage.prompt_tokens_details.cached_tokens = Math.min(this.cachedTokens, completion.usage.prompt_tokens);
    const headers = { 'apim-request-id': randomUUID(), 'x-ms-region': 'Sweden Central', 'x-ratelimit-remaining-requests': '99', 'x-ratelimit-remaining-tokens': '99000' };
    const promptFilter = [{ prompt_index: 0, content_filter_results: SAFE }];
    if (this.filteredCategory !== null) return this.filteredAnswer(exchange, parsed.request.stream, completion, headers, mode, this.filteredCategory);
    if (parsed.request.stream) {
      const frames = streamFrames(completion).map((frame) => frame.replace('"finish_reason"', `"content_filter_results":${JSON.stringify(SAFE)},"finish_reason"`));
      // Azure opens every stream with a chunk that has no choices, only the prompt's filter results.
      frames.unshift(`data: ${JSON.stringify({ choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: promptFilter })}\n\n`);
      return deliverStream(exchange, { 'content-type': 'text/event-stream; charset=utf-8', ...headers }, frames, mode, 0);
    }
    const json = JSON.parse(completionJson(completion)) as Record<string, any>;
    json.prompt_filter_results = promptFilter;
    for (const choice of json.choices) choice.content_filter_results = SAFE;
    return deliverJson(exchange, { 'content-type': 'application/json', ...headers }, JSON.stringify(json), mode);
  }

  /**
   * An answer the completion filter blocked, as Azure's content filtering documentation shows it: a whole answer
   * returns no content, with finish_reason content_filter and the category that fired in the choice's
   * content_filter_results; a stream sends what passed, then a chunk without a delta (and with an empty id) carrying
   * finish_reason content_filter and the results, then [DONE].
   */
  private filteredAnswer(exchange: LiveExchange, stream: boolean, completion: ReturnType<typeof planCompletion>, headers: Record<string, string>, mode: UpstreamMode, category: string): Promise<void> {
    const promptFilter = [{ prompt_index: 0, content_filter_results: SAFE }];
    if (stream) {
      const frames = streamFrames(completion);
      const passed = frames.slice(0, Math.max(0, frames.findIndex((frame) => /"finish_reason":"(?:stop|length)"/.test(frame))));
      const last = { id: '', object: '', created: 0, model: '', choices: [{ index: 0, finish_reason: 'content_filter', content_filter_results: blockedResults(category) }], usage: null };
      const opening = { choices: [], created: 0, id: '', model: '', object: '', prompt_filter_results: promptFilter };
      const all = [`data: ${JSON.stringify(opening)}\n\n`, ...passed, `data: ${JSON.stringify(last)}\n\n`, 'data: [DONE]\n\n'];
      return deliverStream(exchange, { 'content-type': 'text/event-stream; charset=utf-8', ...headers }, all, mode, 0);
    }
    const json = JSON.parse(completionJson(completion)) as Record<string, any>;
    json.prompt_filter_results = promptFilter;
    json.choices = [{ index: 0, finish_reason: 'content_filter', logprobs: null, message: { role: 'assistant' }, content_filter_results: blockedResults(category) }];
    return deliverJson(exchange, { 'content-type': 'application/json', ...headers }, JSON.stringify(json), mode);
  }
}

/** The completion filter's results when it blocked `category` at severity medium. */
function blockedResults(category: string): Record<string, unknown> {
  return { ...SAFE, [category]: { filtered: true, severity: 'medium' } };
}

export async function startAzureUpstream(options: AzureUpstreamOptions = {}): Promise<AzureUpstream> {
  const upstream = new ScriptedAzure(options);
  await upstream.listen();
  return upstream;
}
