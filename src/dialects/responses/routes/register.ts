import type { FastifyInstance } from 'fastify';
import { createRequestContext } from '../../../core/context.js';
import { hasExactNumbers } from '../../../exact-numbers.js';
import { resolveModelName } from '../../../routing/bare-model.js';
import { keepsGeminiFields } from '../../gemini/model-name.js';
import { takeRequestFallbacks } from '../../openai/parse-request.js';
import { presentedCredential } from '../../openai/routes/register.js';
import type { ChatCompletionRequest } from '../../../core/canonical.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { headerString } from '../../../http/request-headers.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { RESPONSES_FORMAT } from '../../../wire/openai-responses/format.js';
import { sendsClaudeMessages, withoutLogprobs } from '../../../providers/anthropic/index.js';
import { withoutTopLogprobs } from '../../../providers/cohere/logprobs.js';
import { readResponsesRequest } from '../parse-request.js';
import { canonicalRequest } from '../request.js';
import { respondResponses } from './respond.js';
import { responseKeeper } from './keeper.js';
import { startTurn } from './previous.js';
import { registerStoredResponseRoutes } from './stored.js';
import { registerInputTokensRoutes } from './input-tokens.js';
import { registerCompactRoutes } from './compact.js';

/**
 * OpenAI's Responses API (`POST /v1/responses`, and `/responses` for a base URL without `/v1`), for the `openai`
 * SDK's `client.responses.create()`, the Agents SDK, Codex and the Vercel AI SDK. The request becomes a canonical
 * one and runs through the same pipeline as chat (keys, budgets, limits, guardrails, cache, routing, logs); an
 * attempt on a provider that serves the Responses API itself (OpenAI) sends the client's own body and its answer
 * comes back as the upstream wrote it (native pass-through), any other provider gets the translation, and its
 * answer is rendered back as a Response. Errors are in OpenAI's shape (the app's error handler).
 */
export function registerResponsesRoutes(app: FastifyInstance, deps: HttpDeps): void {
  registerStoredResponseRoutes(app, deps);
  registerInputTokensRoutes(app, deps);
  registerCompactRoutes(app, deps);
  for (const prefix of ['/v1', '']) {
    app.post(`${prefix}/responses`, async (request, reply) => {
      const config = deps.config.current();
      const turn = startTurn(deps, request, readResponsesRequest(request.body), config);
      const body = turn.body;
      // tollgate's own `fallbacks` works here as on chat, and is taken off before anything reaches an upstream.
      const requestFallbacks = takeRequestFallbacks(body as ChatCompletionRequest);
      const model = resolveModelName(config, body.model);
      const fallbacks = requestFallbacks.map((name) => resolveModelName(config, name));
      // Gemini's thought signatures ride on the canonical tool calls only when every target named reads them.
      const geminiSignatures = [model, ...fallbacks].every((name) => keepsGeminiFields(config, name));
      const { request: chat, untranslatable } = canonicalRequest(body, model, turn.previousError, { geminiSignatures });
      const ctx = createRequestContext({
        dialect: 'openai-responses',
        path: request.url,
        config,
        request: chat,
        responseModel: body.model,
        clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
        requestFallbacks: fallbacks,
        credential: presentedCredential(request),
        fromRemote: isRemoteClient(request, config.settings),
        id: request.id,
        clientHeaders: request.headers,
        exactNumbers: hasExactNumbers(request.body),
        // A provider serving the Responses API gets the client's own body; others the translation, or, when the body
        // holds what chat completions cannot say (state kept by the provider, built-in tools), the 400 saying so.
        // Log probabilities asked for by `include` come back empty from a provider that has none (Claude refuses
        // chat completions' `logprobs` with a 400, which this API does not promise; so does Bedrock), and without alternatives from
        // Cohere, which gives each token's but refuses chat completions' `top_logprobs` above 0.
        native: {
          format: RESPONSES_FORMAT,
          body,
          untranslatable,
          pinned: turn.pinned ?? null,
          requestFor: (canonical, format, target) => {
            // Claude and Bedrock's Converse give none (a chat request asking for them is a 400 there).
            if (sendsClaudeMessages(format, target.model) || format === 'bedrock') return withoutLogprobs(canonical);
            return format === 'cohere' ? withoutTopLogprobs(canonical) : canonical;
          },
        },
      });
      // The answer is written to the raw response so events go out as they arrive, without framework buffering.
      reply.hijack();
      // OpenAI keeps a Response unless told not to (store defaults to true); tollgate keeps those it answers the same way.
      const stored = body.store !== false;
      const keeper = stored ? responseKeeper(deps.responses, ctx, turn, deps.log) : null;
      const replyContext = { model: body.model, body, stored, previousResponseId: turn.previousResponseId };
      await respondResponses(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, replyContext, keeper);
    });
  }
}
