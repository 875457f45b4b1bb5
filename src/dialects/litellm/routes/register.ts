import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RuntimeConfig } from '../../../core/config.js';
import type { RequestContext } from '../../../core/context.js';
import { liteLLMModelName } from '../model-names.js';
import { takeLiteLLMFields } from '../request-extras.js';
import { liteLLMCacheHeaders } from '../cache-controls.js';
import { isRouteName } from '../../../routing/route-patterns.js';
import { resolveModelName } from '../../../routing/bare-model.js';
import type { HttpDeps } from '../../../http/deps.js';
import { healthStatus } from '../../../http/health.js';
import { presentedCredential, registerOpenAIMount } from '../../openai/routes/register.js';
import { headerString } from '../../../http/request-headers.js';
import { sendUnknownUrl } from '../../../http/render-error.js';

/**
 * LiteLLM's names mapped to tollgate's. A name a configured route claims (exactly or by pattern) is left as
 * it is, so it routes exactly as it would under `/v1`. A bare name LiteLLM infers no provider for
 * (`llama-local`) then resolves as on `/v1`, before the pipeline: key `models`, per-model limits, budgets and
 * the log all read the `<provider>/<model>` that is routed, and `models.retrieve` finds it.
 */
export function mapLiteLLMModel(model: string, config: RuntimeConfig): string {
  const name = config.routes.size === 0 ? liteLLMModelName(model) : liteLLMModelName(model, (candidate) => isRouteName(config.routes, candidate));
  return resolveModelName(config, name);
}

/**
 * The virtual key as the LiteLLM proxy finds it: `x-litellm-api-key` (bare or as `Bearer <key>`) before
 * `Authorization: Bearer` (get_api_key in litellm/proxy/auth/user_api_key_auth.py: "X-LiteLLM-API-Key ...
 * supersedes Authorization header"), so a client whose Authorization carries something else (an SDK's required
 * placeholder) is still known by its key; then `Authorization` and `x-api-key`, as on `/v1`.
 */
export function liteLLMCredential(request: FastifyRequest): string | null {
  const own = headerString(request, 'x-litellm-api-key');
  if (own !== null) return /^Bearer\s+(.+)$/i.exec(own)?.[1]?.trim() || own;
  return presentedCredential(request);
}

/**
 * The LiteLLM proxy's answer headers that its clients read (docs.litellm.ai/docs/proxy/response_headers):
 * `x-litellm-call-id`, the request's id (tollgate's `x-request-id`, which its request log is kept under), and on a
 * whole answer `x-litellm-response-cost`, what the request was charged in USD. A stream's headers go out before
 * its cost is known, so it has none, as with LiteLLM.
 */
export function liteLLMAnswerHeaders(ctx: RequestContext, settled: boolean): Record<string, string> {
  const headers: Record<string, string> = { 'x-litellm-call-id': ctx.id };
  if (settled && ctx.spent) headers['x-litellm-response-cost'] = String(ctx.spent.usd);
  return headers;
}

/**
 * `/litellm`: for clients of the LiteLLM SDK (or any OpenAI client) whose base URL is `http://HOST:PORT/litellm`,
 * with or without `/v1` after it. The same OpenAI handlers and pipeline, with LiteLLM's model names, and LiteLLM's
 * own request fields (`metadata`, `tags`, `extra_body`, ...) read as the LiteLLM proxy reads them (request-extras.ts).
 */
export function registerLiteLLMRoutes(app: FastifyInstance, deps: HttpDeps): void {
  // A scope of its own, so its hook runs for these routes only (the other routes pay nothing for it).
  app.register(
    async (scope) => {
      // The LiteLLM proxy names the call on its errors too: a refusal sent before the pipeline (a body that is not
      // JSON, a bad field, mock_response) carries it as the route's own answers do (liteLLMAnswerHeaders, which write
      // their headers themselves).
      scope.addHook('onRequest', (request, reply, done) => {
        reply.header('x-litellm-call-id', request.id);
        done();
      });
      // Unknown URLs and wrong methods under /litellm are answered in this scope, so the hook above names the call on
      // their 404 and 405 too (the root's handler runs none of this scope's hooks); same OpenAI-shaped answer as /v1's.
      scope.setNotFoundHandler(sendUnknownUrl);
      for (const prefix of ['', '/v1']) registerOpenAIMount(scope, deps, { prefix, dialect: 'litellm', mapModel: mapLiteLLMModel, takeGatewayFields: takeLiteLLMFields, hintHeaders: liteLLMCacheHeaders, credential: liteLLMCredential, answerHeaders: liteLLMAnswerHeaders });
      scope.get('/health', async () => healthStatus(deps));
    },
    { prefix: '/litellm' },
  );
}
