import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { canonicalModelName } from '../model-name.js';
import { anthropicRequestFor } from '../markers.js';
import { readMessagesRequest } from '../parse-request.js';
import { readCanonical } from '../lenient.js';
import { takeRequestFallbacks } from '../../openai/parse-request.js';
import type { ChatCompletionRequest } from '../../../core/canonical.js';
import { GatewayError } from '../../../core/errors.js';
import { createRequestContext } from '../../../core/context.js';
import { hasExactNumbers } from '../../../exact-numbers.js';
import { countInputTokens, inputGuarded } from './count-tokens.js';
import { renderAnthropicError } from './errors.js';
import { registerAnthropicModelRoutes } from './models.js';
import { anthropicBetas, presentedCredential } from './headers.js';
import { headerString } from '../../../http/request-headers.js';
import { checkVirtualKey } from '../../../http/key-check.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { wrongMethod } from '../../../http/wrong-method.js';
import { respondAnthropic } from './respond.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { fromFrameworkError } from '../../../http/render-error.js';
import { gatewayError } from '../../../core/errors.js';

function sendError(reply: FastifyReply, error: GatewayError): FastifyReply {
  const rendered = renderAnthropicError(error, reply.request.id);
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

/** tollgate's own `fallbacks` field works here as on `/v1`, and is taken off before translating. */
function fallbacksOf(body: unknown): string[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  return takeRequestFallbacks(body as ChatCompletionRequest);
}

/**
 * Anthropic's Messages API under `/anthropic`, for Anthropic SDK clients (`baseURL: http://host/anthropic`).
 * The request becomes a canonical one and runs through the same pipeline as `/v1` (keys, budgets, routing,
 * logs); an attempt on an Anthropic upstream (Claude on Vertex AI and on Bedrock included) sends the client's own body and its answer comes back as the
 * upstream wrote it (native pass-through), any other upstream's answer is rendered back from the canonical one.
 * The client's `anthropic-version` and `anthropic-beta` go to an Anthropic upstream (forward-headers.ts), on
 * messages and count_tokens alike; other formats never see them.
 *
 * It is its own fastify scope so its errors, including framework errors and unknown URLs, are in Anthropic's shape.
 */
export function registerAnthropicRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.register(
    async (scope) => {
      scope.setErrorHandler((err, _request, reply) => {
        const error = fromFrameworkError(err, deps.config.current().settings.maxBodyBytes);
        if (error.status >= 500 && !(err instanceof GatewayError)) deps.log.error({ err }, 'unhandled error in the anthropic route');
        return sendError(reply, error);
      });

      scope.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) =>
        sendError(reply, wrongMethod(request) ?? gatewayError('unknown_url', `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`)),
      );

      scope.post('/v1/messages', async (request, reply) => {
        const requestFallbacks = fallbacksOf(request.body);
        const body = readMessagesRequest(request.body, 'messages');
        const config = deps.config.current();
        const model = canonicalModelName(config, body.model);
        const { request: chat, untranslatable } = readCanonical(body, model, {});
        const ctx = createRequestContext({
          dialect: 'anthropic',
          path: request.url,
          config,
          request: chat,
          clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
          requestFallbacks,
          credential: presentedCredential(request),
          fromRemote: isRemoteClient(request, config.settings),
          id: request.id,
          clientHeaders: request.headers,
          exactNumbers: hasExactNumbers(request.body),
          // An Anthropic upstream gets the client's own body (native pass-through); other formats the translation,
          // shaped per attempt for the target's format, or, when the body holds what the canonical form cannot
          // express, the 400 saying so (the call stage).
          native: { format: 'anthropic', body, untranslatable, requestFor: anthropicRequestFor, betas: anthropicBetas(request) },
        });
        // The answer is written to the raw response so events go out as they arrive, without framework buffering.
        reply.hijack();
        const stopSequences = Array.isArray(body.stop_sequences) ? (body.stop_sequences as string[]) : [];
        await respondAnthropic(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, { model: body.model, stopSequences });
      });

      registerAnthropicModelRoutes(scope, deps);

      scope.post('/v1/messages/count_tokens', async (request, reply) => {
        fallbacksOf(request.body);
        const body = readMessagesRequest(request.body, 'count_tokens');
        const config = deps.config.current();
        const key = checkVirtualKey(deps.governance, config, isRemoteClient(request, config.settings), presentedCredential(request), canonicalModelName(config, body.model));
        const team = key?.team ? (deps.governance.getTeamRecord(key.team) ?? null) : null;
        const answer = await countInputTokens({
          config,
          inputGuarded: inputGuarded(config, key, team),
          body,
          clientProviderKey: headerString(request, CLIENT_PROVIDER_KEY_HEADER),
          clientHeaders: request.headers,
          dispatcher: deps.outbound.dispatcher,
        });
        return reply.header('request-id', request.id).type('application/json; charset=utf-8').send(answer);
      });
    },
    { prefix: '/anthropic' },
  );
}
