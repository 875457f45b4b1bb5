import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { estimateGeminiTokens } from '../count-tokens.js';
import { canonicalEmbeddingsRequest, readEmbedRequests } from '../embeddings.js';
import { takesInputType } from '../embed-input-type.js';
import { canonicalGeminiModel, keepsGeminiFields, parseModelPath } from '../model-name.js';
import { readGenerateCanonical, readGenerateRequest } from '../request.js';
import { isRecord } from '../../../core/is-record.js';
import { takeRequestFallbacks } from '../../openai/parse-request.js';
import type { ChatCompletionRequest } from '../../../core/canonical.js';
import { GatewayError } from '../../../core/errors.js';
import { createRequestContext } from '../../../core/context.js';
import { hasExactNumbers } from '../../../exact-numbers.js';
import { checkVirtualKey } from '../../../http/key-check.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { wrongMethod } from '../../../http/wrong-method.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { renderGoogleError, respondGemini } from './respond.js';
import { registerGenAIModelRoutes } from './models.js';
import { fromFrameworkError } from '../../../http/render-error.js';
import { bearerToken, headerString } from '../../../http/request-headers.js';
import { gatewayError } from '../../../core/errors.js';
import { genAIRequestFor } from '../request-for.js';
import type { RuntimeConfig } from '../../../core/config.js';
import { resolveCandidates } from '../../../routing/resolve-target.js';
import { isRouteName } from '../../../routing/route-patterns.js';

const DIALECT = 'gemini';

/** The API versions Google serves the Gemini API under (`v1beta` is the SDKs' default). */
const API_VERSION = /^v1(?:alpha|beta)?$/;

function queryString(request: FastifyRequest, name: string): string | null {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

/**
 * The key a client presents: `x-goog-api-key` (how the Google Gen AI SDKs send `apiKey`), the `?key=` query
 * parameter (Google's REST examples), or, as on the other routes, `Authorization: Bearer` / `x-api-key`.
 * A copy of the `/v1` helper's idea, so the dialects' routes do not depend on each other.
 */
export function genAICredential(request: FastifyRequest): string | null {
  const google = headerString(request, 'x-goog-api-key') ?? queryString(request, 'key');
  if (google) return google;
  return bearerToken(request) ?? headerString(request, 'x-api-key');
}

function sendError(reply: FastifyReply, error: GatewayError): FastifyReply {
  const rendered = renderGoogleError(error);
  return reply.code(rendered.status).headers(rendered.headers).send(rendered.body);
}

function unknownUrl(request: FastifyRequest): GatewayError {
  return wrongMethod(request) ?? gatewayError('unknown_url', `Unknown request URL: ${request.method} ${request.url.split('?')[0]}.`);
}

/** tollgate's own `fallbacks` field works here as on `/v1`, and is taken off before translating. */
function fallbacksOf(body: unknown): string[] {
  if (!isRecord(body)) return [];
  return takeRequestFallbacks(body as ChatCompletionRequest);
}

/**
 * A countTokens for a model the gateway cannot resolve (an unknown provider or model, a bare name no provider
 * serves) gets the 404 generateContent gets for it, not an estimate for a model that does not exist. Only those:
 * the estimate calls no upstream, so a provider without a key, say, still gets its count. A route resolves as a route.
 */
function refuseUnknownModel(config: RuntimeConfig, model: string, clientProviderKey: string | null): void {
  if (isRouteName(config.routes, model)) return;
  try {
    resolveCandidates(config, model, clientProviderKey);
  } catch (err) {
    if (err instanceof GatewayError && err.status === 404) throw err;
  }
}

/** What follows `/models/` in the raw URL, undecoded, so an encoded `%2F` in a model name is told apart from a path separator. */
function modelPathOf(request: FastifyRequest): string {
  const path = request.url.split('?')[0] ?? '';
  const at = path.indexOf('/models/');
  return at === -1 ? '' : path.slice(at + '/models/'.length);
}

/**
 * Google's Gemini API under `/genai`, for Google Gen AI SDK clients (`httpOptions: {baseUrl: 'http://host/genai'}`):
 * `POST /genai/{v1beta|v1|v1alpha}/models/{model}:{generateContent|streamGenerateContent|embedContent|batchEmbedContents|countTokens}`.
 * The route only translates: the request becomes a canonical one and runs through the same pipeline as `/v1`
 * (keys, budgets, routing, logs), and the answer is rendered back. A bare Gemini model name means the `gemini`
 * provider; `<provider>/<model>` (plain or URL-encoded) and route names reach any model.
 *
 * It is its own fastify scope so its errors, including framework errors and unknown URLs, are in Google's shape.
 */
export function registerGenAIRoutes(app: FastifyInstance, deps: HttpDeps): void {
  app.register(
    async (scope) => {
      scope.setErrorHandler((err, _request, reply) => {
        const error = fromFrameworkError(err, deps.config.current().settings.maxBodyBytes);
        if (error.status >= 500 && !(err instanceof GatewayError)) deps.log.error({ err }, 'unhandled error in the genai route');
        return sendError(reply, error);
      });

      scope.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => sendError(reply, unknownUrl(request)));

      registerGenAIModelRoutes(scope, deps, API_VERSION, genAICredential);

      scope.post('/:version/models/*', async (request, reply) => {
        const { version } = request.params as { version: string };
        const parsed = API_VERSION.test(version) ? parseModelPath(modelPathOf(request)) : null;
        if (!parsed) return sendError(reply, unknownUrl(request));
        const config = deps.config.current();
        const model = canonicalGeminiModel(config, parsed.model);
        const geminiFields = keepsGeminiFields(config, model);
        const credential = genAICredential(request);
        const fromRemote = isRemoteClient(request, config.settings);
        const clientProviderKey = headerString(request, CLIENT_PROVIDER_KEY_HEADER);

        if (parsed.method === 'countTokens') {
          fallbacksOf(request.body);
          // Counting costs nothing, so no budget or rate limit; but a `tg-` key must be live and allowed the model.
          checkVirtualKey(deps.governance, config, fromRemote, credential, model);
          refuseUnknownModel(config, model, clientProviderKey);
          const totalTokens = estimateGeminiTokens(request.body);
          return reply.type('application/json; charset=utf-8').send(JSON.stringify({ totalTokens }));
        }

        if (parsed.method === 'embedContent' || parsed.method === 'batchEmbedContents') {
          const batch = parsed.method === 'batchEmbedContents';
          // Taken off before the body is read, as for generateContent (and embeddings on /v1).
          const requestFallbacks = fallbacksOf(request.body).map((name) => canonicalGeminiModel(config, name));
          const embeddings = canonicalEmbeddingsRequest(readEmbedRequests(request.body, batch), model, geminiFields, takesInputType(config, model));
          const ctx = createRequestContext({
            dialect: DIALECT,
            path: request.url,
            config,
            operation: 'embeddings',
            request: embeddings,
            responseModel: parsed.model,
            clientProviderKey,
            requestFallbacks,
            credential,
            fromRemote,
            id: request.id,
            clientHeaders: request.headers,
            exactNumbers: hasExactNumbers(request.body),
          });
          reply.hijack();
          await respondGemini(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, { kind: 'embed', batch });
          return;
        }

        const requestFallbacks = fallbacksOf(request.body).map((name) => canonicalGeminiModel(config, name));
        const body = readGenerateRequest(request.body);
        const stream = parsed.method === 'streamGenerateContent';
        const { request: chat, info, untranslatable } = readGenerateCanonical(body, model, stream, { geminiFields });
        const ctx = createRequestContext({
          dialect: DIALECT,
          path: request.url,
          config,
          request: chat,
          responseModel: parsed.model,
          clientProviderKey,
          requestFallbacks,
          credential,
          fromRemote,
          id: request.id,
          clientHeaders: request.headers,
          exactNumbers: hasExactNumbers(request.body),
          // A Gemini upstream gets the client's own body (native pass-through); other formats the translation, or,
          // when the body holds what the canonical form cannot express, the 400 saying so (the call stage). The
          // reasoning_effort a thinkingConfig became goes as each target's model takes it. The body goes to the API
          // version the client wrote it for.
          native: { format: 'gemini', body, untranslatable, apiVersion: version, requestFor: genAIRequestFor },
        });
        // The answer is written to the raw response so events go out as they arrive, without framework buffering.
        reply.hijack();
        const framing = !stream ? 'json' : queryString(request, 'alt') === 'sse' ? 'sse' : 'array';
        await respondGemini(reply.raw, ctx, deps.pipelineFor(config).execute(ctx), deps.log, {
          kind: 'generate',
          framing,
          reply: { model: parsed.model, includeThoughts: info.includeThoughts, wrappedAnswer: info.wrappedAnswer },
        });
      });
    },
    { prefix: '/genai' },
  );
}
