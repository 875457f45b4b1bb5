import type { FastifyInstance } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionRequest, NativeAnswer, ResponseEvent } from '../../../core/canonical.js';
import { createRequestContext, type RequestContext } from '../../../core/context.js';
import { gatewayError, toGatewayError } from '../../../core/errors.js';
import { isRecord } from '../../../core/is-record.js';
import { quoteInput } from '../../../core/quote-input.js';
import { hasExactNumbers } from '../../../exact-numbers.js';
import { answerHeaders } from '../../../http/answer-headers.js';
import { JSON_HEADERS, serveAnswer, SSE_HEADERS, TickWriter, writeRenderedError } from '../../../http/answer-stream.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { openAIErrorBody, renderOpenAIError } from '../../../http/render-error.js';
import { headerString } from '../../../http/request-headers.js';
import { SSE_COMMENT, streamKeepAlive } from '../../../http/stream-keepalive.js';
import type { Log } from '../../../log.js';
import { resolveModelName } from '../../../routing/bare-model.js';
import { COMPLETIONS_FORMAT } from '../../../wire/openai-completions/format.js';
import { modelNameError } from '../../model-name-check.js';
import { openAINativeFramer, openAINativeJson } from '../native.js';
import { takeRequestFallbacks } from '../parse-request.js';
import { presentedCredential } from './register.js';

/** OpenAI's default `max_tokens` of a legacy completion. */
const DEFAULT_MAX_TOKENS = 16;

/** Why a target of a provider without the legacy Completions API cannot take the request. */
function completionsRefused(model: string) {
  return gatewayError(
    'unsupported_for_provider',
    `The legacy Completions API (POST /v1/completions) is served only by providers that have it (OpenAI, Together AI, Fireworks AI, OpenRouter, DeepInfra, DeepSeek, Cerebras, Ollama, vLLM, LM Studio), and '${quoteInput(model, 200)}' names no model there: use such a model, or /v1/chat/completions.`,
    { param: 'model' },
  );
}

function isTokenArray(value: unknown): boolean {
  return Array.isArray(value) && value.every((item) => Number.isInteger(item));
}

/**
 * The prompt's text, for the stages that read the request (guardrails, token counts): strings joined with a line
 * break; token arrays hold no text. Throws the 400 when `prompt` is none of the four shapes OpenAI takes.
 */
function promptText(prompt: unknown): string {
  if (typeof prompt === 'string') return prompt;
  if (Array.isArray(prompt) && prompt.every((item) => typeof item === 'string')) return prompt.join('\n');
  if (isTokenArray(prompt) || (Array.isArray(prompt) && prompt.every(isTokenArray))) return '';
  if (prompt === undefined || prompt === null) throw gatewayError('missing_required_parameter', "Missing required parameter: 'prompt'.", { param: 'prompt' });
  throw gatewayError('invalid_type', "Invalid type for 'prompt': expected a string, an array of strings, an array of tokens or an array of token arrays.", { param: 'prompt' });
}

/** Checks the few fields the gateway reads; the rest (suffix, echo, logprobs, best_of, n, stop...) is the provider's to judge. */
function readCompletionsBody(body: unknown): { body: Record<string, unknown>; model: string; text: string } {
  if (!isRecord(body)) throw gatewayError('invalid_body', 'The request body must be a JSON object.');
  const { model } = body;
  if (model === undefined || model === null || model === '') throw gatewayError('missing_required_parameter', "Missing required parameter: 'model'.", { param: 'model' });
  if (typeof model !== 'string') throw gatewayError('invalid_type', "Invalid type for 'model': expected a string.", { param: 'model' });
  const badName = modelNameError(model);
  if (badName !== null) throw gatewayError('invalid_model_name', badName, { param: 'model' });
  const text = promptText(body.prompt);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') {
    throw gatewayError('invalid_type', "Invalid type for 'stream': expected a boolean.", { param: 'stream' });
  }
  const options = body.stream_options;
  if (options !== undefined && options !== null && (!isRecord(options) || (options.include_usage !== undefined && options.include_usage !== null && typeof options.include_usage !== 'boolean'))) {
    throw gatewayError('invalid_type', "Invalid type for 'stream_options': expected an object with a boolean 'include_usage'.", { param: 'stream_options' });
  }
  return { body, model, text };
}

/** A canonical choice (message or delta) as a legacy `text_completion` choice. */
function legacyChoice(choice: unknown, key: 'message' | 'delta'): Record<string, unknown> {
  const record = isRecord(choice) ? choice : {};
  const part = isRecord(record[key]) ? (record[key] as Record<string, unknown>) : {};
  return { text: typeof part.content === 'string' ? part.content : '', index: typeof record.index === 'number' ? record.index : 0, logprobs: null, finish_reason: record.finish_reason ?? null };
}

/** An answer a stage made (a guardrail's redaction) in the legacy shape, since the upstream's own text is not it. */
function legacyObject(answer: ChatCompletion | ChatCompletionChunk, model: string, key: 'message' | 'delta'): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: answer.id,
    object: 'text_completion',
    created: typeof answer.created === 'number' ? answer.created : Math.floor(Date.now() / 1000),
    model,
    choices: answer.choices.map((choice) => legacyChoice(choice, key)),
  };
  if (answer.usage || key === 'message') out.usage = answer.usage ?? null;
  return out;
}

/** The field OpenAI may write on every chunk of a stream asked for usage, as its compact JSON spells it. */
const NULL_USAGE = ',"usage":null';

/**
 * Writes a legacy completion: the upstream's own answer (or stream events) as it came but for `model`, which shows
 * the client's name; an answer a stage replaced in the legacy shape; errors in OpenAI's shape (before the first
 * byte with their status, after it as an SSE error event and the end).
 */
function respondLegacyCompletions(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log, clientAskedUsage: boolean): Promise<void> {
  let started = false;
  let whole: string | null = null;
  const framer = openAINativeFramer(ctx.responseModel);
  const open = (): void => {
    res.writeHead(200, Object.assign(answerHeaders(ctx), SSE_HEADERS));
    started = true;
  };
  const writes = new TickWriter(res, streamKeepAlive(res, ctx, SSE_COMMENT, open));
  const own = (native: NativeAnswer | undefined): string | null =>
    native?.format === COMPLETIONS_FORMAT && typeof native.text === 'string' ? framer({ format: 'openai', text: native.text }) : null;
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      if (event.kind === 'embeddings') return;
      if (event.kind === 'completion') {
        // The upstream's own text, its model shown as the client's (as a chat completion's is), else the stage's answer.
        const upstreams = event.native?.format === COMPLETIONS_FORMAT ? openAINativeJson({ format: 'openai', text: event.native.text }, ctx.responseModel) : null;
        whole = upstreams ?? JSON.stringify(legacyObject(event.completion, ctx.responseModel, 'message'));
        return;
      }
      if (!started) open();
      const { chunk } = event;
      // The usage the gateway asked the upstream for (to charge by its count), not the client: left out.
      if (!clientAskedUsage && chunk.choices.length === 0 && chunk.usage) return;
      const frame = own(event.native);
      if (frame !== null) {
        if (clientAskedUsage) return writes.write(frame);
        const at = frame.indexOf(NULL_USAGE);
        return writes.write(at === -1 ? frame : frame.slice(0, at) + frame.slice(at + NULL_USAGE.length));
      }
      if (chunk.choices.length === 0 && !chunk.usage) return;
      writes.write(`data: ${JSON.stringify(legacyObject(chunk, ctx.responseModel, 'delta'))}\n\n`);
    },
    error(err: unknown) {
      const error = toGatewayError(err);
      if (!started) writeRenderedError(res, answerHeaders(ctx), renderOpenAIError(error));
      else if (ctx.stream) res.end(`data: ${JSON.stringify(openAIErrorBody(error))}\n\n`);
      else res.destroy();
    },
    complete() {
      if (whole !== null) {
        res.writeHead(200, Object.assign(answerHeaders(ctx), JSON_HEADERS));
        res.end(whole);
      } else if (!started) {
        writeRenderedError(res, answerHeaders(ctx), renderOpenAIError(gatewayError('internal_error', 'The upstream answer was empty.')));
      } else {
        res.end('data: [DONE]\n\n');
      }
    },
  }, writes);
}

/**
 * OpenAI's legacy Completions API (`POST /v1/completions`, the SDK's `client.completions.create`): a prompt (and a
 * suffix, for fill-in-the-middle) whose answer is a `text_completion` object or a stream of them. It runs through the
 * pipeline as a model call (keys, budgets, rate limits, input and output guardrails, routing with retries and
 * fallbacks, cost and the request log; never the response cache or MCP tools), and only targets whose provider serves
 * the API take it, with the client's body as it came but for `model`; a route's other targets are left out, and a
 * model of another provider is a 400. Errors are in OpenAI's shape.
 */
export function registerLegacyCompletionsRoutes(app: FastifyInstance, deps: HttpDeps): void {
  for (const prefix of ['/v1', '']) {
    app.post(`${prefix}/completions`, async (request, reply) => {
      const { body, model: clientModel, text } = readCompletionsBody(request.body);
      const requestFallbacks = takeRequestFallbacks(body as ChatCompletionRequest);
      const config = deps.config.current();
      const model = resolveModelName(config, clientModel);
      const chat: ChatCompletionRequest = {
        model,
        messages: [{ role: 'user', content: text }],
        max_completion_tokens: typeof body.max_tokens === 'number' ? body.max_tokens : DEFAULT_MAX_TOKENS,
      };
      if (body.stream === true) chat.stream = true;
      if (isRecord(body.stream_options)) chat.stream_options = body.stream_options as ChatCompletionRequest['stream_options'];
      const clientAskedUsage = isRecord(body.stream_options) && body.stream_options.include_usage === true;
      const ctx = createRequestContext({
        dialect: 'openai',
        path: request.url,
        config,
        request: chat,
        responseModel: clientModel,
        clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
        requestFallbacks: requestFallbacks.map((name) => resolveModelName(config, name)),
        credential: presentedCredential(request),
        fromRemote: isRemoteClient(request, config.settings),
        id: request.id,
        clientHeaders: request.headers,
        exactNumbers: hasExactNumbers(request.body),
        // Nothing translates a legacy completion: every target whose provider does not serve the API is left out.
        native: { format: COMPLETIONS_FORMAT, body, untranslatable: completionsRefused(clientModel) },
      });
      reply.hijack();
      await respondLegacyCompletions(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, clientAskedUsage);
    });
  }
}
