import type { FastifyInstance } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Observable } from 'rxjs';
import type { ChatCompletionRequest, ResponseEvent } from '../../../core/canonical.js';
import { createRequestContext, type RequestContext } from '../../../core/context.js';
import { gatewayError, toGatewayError } from '../../../core/errors.js';
import { quoteInput } from '../../../core/quote-input.js';
import { hasExactNumbers } from '../../../exact-numbers.js';
import { answerHeaders } from '../../../http/answer-headers.js';
import { JSON_HEADERS, serveAnswer, writeRenderedError } from '../../../http/answer-stream.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { headerString } from '../../../http/request-headers.js';
import { renderOpenAIError } from '../../../http/render-error.js';
import type { Log } from '../../../log.js';
import { resolveModelName } from '../../../routing/bare-model.js';
import { COMPACT_FORMAT } from '../../../wire/openai-responses/format.js';
import { takeRequestFallbacks } from '../../openai/parse-request.js';
import { presentedCredential } from '../../openai/routes/register.js';
import { inClientNames } from '../client-names.js';
import { readResponsesRequest } from '../parse-request.js';
import { canonicalRequest } from '../request.js';
import { startTurn } from './previous.js';

/** Why a target of another provider cannot take a compaction: only OpenAI's API compacts (its item is OpenAI's, encrypted). */
function compactionRefused(model: string) {
  return gatewayError(
    'unsupported_for_provider',
    `Compaction (POST /v1/responses/compact) is served by OpenAI's API (and Azure OpenAI's v1 API) only, and '${quoteInput(model, 200)}' names no model there: compact with such a model, or send the conversation to /v1/responses as it is.`,
    { param: 'model' },
  );
}

/**
 * Writes the compaction as the upstream wrote it (its text, so numbers keep their digits; a `response.compaction`
 * object names no model, so nothing is shown in the client's names), or the error in OpenAI's shape.
 */
function respondCompaction(res: ServerResponse, ctx: RequestContext, answer: Observable<ResponseEvent>, log: Log): Promise<void> {
  let body: string | null = null;
  return serveAnswer(res, ctx, answer, log, {
    next(event) {
      if (event.kind !== 'completion' || event.native?.format !== COMPACT_FORMAT || !event.native.body) return;
      body = event.native.text ?? JSON.stringify(event.native.body);
    },
    error(err: unknown) {
      writeRenderedError(res, answerHeaders(ctx), renderOpenAIError(inClientNames(toGatewayError(err))));
    },
    complete() {
      // Only the upstream's own compaction answers (a plugin or a guardrail that answered instead wrote no such object).
      if (body === null) {
        writeRenderedError(res, answerHeaders(ctx), renderOpenAIError(gatewayError('internal_error', 'The compaction was answered without a response.compaction object.')));
        return;
      }
      res.writeHead(200, Object.assign(answerHeaders(ctx), JSON_HEADERS));
      res.end(body);
    },
  });
}

/**
 * OpenAI's "Compact a response" (`POST /v1/responses/compact`, the SDK's `client.responses.compact`, which Codex
 * calls to shorten a long conversation): a Responses body (model, input, instructions, previous_response_id) whose
 * answer is a `response.compaction` object. It runs through the pipeline as a model call (keys, budgets, rate limits,
 * input guardrails, routing with retries and fallbacks, cost and the request log; never the response cache or MCP
 * tools), and only targets on OpenAI's API take it, with the client's body as it came but for `model`; a route's other
 * targets are left out, and a model of another provider is a 400. A `previous_response_id` tollgate kept for the
 * caller is expanded into the conversation, as on /v1/responses. Errors are in OpenAI's shape.
 */
export function registerCompactRoutes(app: FastifyInstance, deps: HttpDeps): void {
  for (const prefix of ['/v1', '']) {
    app.post(`${prefix}/responses/compact`, async (request, reply) => {
      const config = deps.config.current();
      const turn = startTurn(deps, request, readResponsesRequest(request.body), config);
      const body = turn.body;
      const requestFallbacks = takeRequestFallbacks(body as ChatCompletionRequest);
      const model = resolveModelName(config, body.model);
      const { request: chat } = canonicalRequest(body, model, turn.previousError, { geminiSignatures: false });
      // The answer is one object, never a stream: a `stream` the client sent is OpenAI's to refuse.
      delete chat.stream;
      delete chat.stream_options;
      const ctx = createRequestContext({
        dialect: 'openai-responses',
        path: request.url,
        config,
        request: chat,
        responseModel: body.model,
        clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
        requestFallbacks: requestFallbacks.map((name) => resolveModelName(config, name)),
        credential: presentedCredential(request),
        fromRemote: isRemoteClient(request, config.settings),
        id: request.id,
        clientHeaders: request.headers,
        exactNumbers: hasExactNumbers(request.body),
        // Nothing translates a compaction: every target that does not compact itself is left out of the plan.
        native: { format: COMPACT_FORMAT, body, untranslatable: turn.pinned && turn.previousError ? turn.previousError : compactionRefused(body.model), pinned: turn.pinned ?? null },
      });
      reply.hijack();
      await respondCompaction(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log);
    });
  }
}
