import type { FastifyInstance, FastifyRequest } from 'fastify';
import { request as undiciRequest } from 'undici';
import type { ChatCompletionRequest } from '../../../core/canonical.js';
import type { RuntimeConfig } from '../../../core/config.js';
import { GatewayError, gatewayError } from '../../../core/errors.js';
import type { Target, UpstreamRequest } from '../../../core/provider.js';
import { restoreExactNumbers } from '../../../exact-numbers.js';
import { CLIENT_PROVIDER_KEY_HEADER, type HttpDeps } from '../../../http/deps.js';
import { headerString } from '../../../http/request-headers.js';
import { isRemoteClient } from '../../../http/client-address.js';
import { checkVirtualKey } from '../../../http/key-check.js';
import { messagesBody, withoutLogprobs } from '../../../providers/anthropic/index.js';
import { forwardClientHeaders } from '../../../providers/forward-headers.js';
import { adapterFor } from '../../../providers/registry.js';
import { jsonHeaders, joinUrl } from '../../../providers/upstream-request.js';
import { withBaseQuery } from '../../../providers/base-url.js';
import { upstreamErrorFromBody } from '../../../providers/upstream-error.js';
import { resolveModelName } from '../../../routing/bare-model.js';
import { resolveCandidates, resolveDirectTarget } from '../../../routing/resolve-target.js';
import { isRouteName } from '../../../routing/route-patterns.js';
import { countPromptTokens } from '../../../tokens/tokenizer.js';
import { withoutTranslatedReasoning } from '../../../wire/openai-responses/translated-reasoning.js';
import { inputGuarded } from '../../anthropic/routes/count-tokens.js';
import { keepsGeminiFields } from '../../gemini/model-name.js';
import { takeRequestFallbacks } from '../../openai/parse-request.js';
import { presentedCredential } from '../../openai/routes/register.js';
import { readResponsesRequest } from '../parse-request.js';
import { canonicalRequest } from '../request.js';
import { startTurn, type Turn } from './previous.js';

/** The fields of an Anthropic Messages body its count_tokens takes (it refuses the others, max_tokens among them). */
const ANTHROPIC_COUNT_FIELDS = ['model', 'messages', 'system', 'tools', 'tool_choice', 'thinking', 'output_config'];

/** OpenAI's answer shape (`TokenCountsResource`). */
function countAnswer(tokens: number): string {
  return JSON.stringify({ object: 'response.input_tokens', input_tokens: tokens });
}

function unreachable(provider: string): GatewayError {
  return gatewayError('upstream_unreachable', `${provider}: the upstream could not be reached to count tokens.`);
}

/**
 * The target that counts a direct `<provider>/<model>` name upstream: OpenAI (its own input_tokens) or an
 * Anthropic-format provider (its count_tokens), with a key; null for a route or any other provider (estimated). A
 * model the gateway cannot resolve fails here as a Responses request to it fails (404 unknown provider or model); one
 * it cannot call (no key) is estimated, as on /genai. A previous Response OpenAI kept is counted with the key that made it while it is configured.
 */
function countingTarget(config: RuntimeConfig, model: string, clientKey: string | null, pinned: Turn['pinned']): Target | null {
  if (isRouteName(config.routes, model)) return null;
  let candidates: ReturnType<typeof resolveCandidates>;
  try {
    candidates = resolveCandidates(config, model, clientKey);
  } catch (err) {
    // A model that does not exist is the 404 a Responses request gets; one without a key is estimated (no call).
    if (err instanceof GatewayError && err.status === 404) throw err;
    return null;
  }
  const first = candidates[0]?.target;
  if (!first || first.apiKey === null) return null;
  const vendor = first.provider.vendor;
  if (vendor.id !== 'openai' && vendor.format !== 'anthropic') return null;
  const kept = pinned && pinned.provider === first.provider.name ? candidates.find((candidate) => candidate.target.keyId === pinned.keyId) : undefined;
  return kept?.target ?? resolveDirectTarget(config, model, clientKey);
}

interface CountCall {
  config: RuntimeConfig;
  request: FastifyRequest;
  deps: HttpDeps;
}

/**
 * POSTs a count body to the target (its headers and credential as a model call to it gets them, the client's headers
 * meant for the vendor and the operator's forward_headers), and returns the upstream's answer text; an upstream
 * refusal is its error in the target adapter's terms, with its status.
 */
async function upstreamCount(target: Target, url: string, body: Record<string, unknown>, call: CountCall): Promise<{ text: string; tokens: number }> {
  const { provider } = target;
  const built: UpstreamRequest = { method: 'POST', url: withBaseQuery(url, provider.baseQuery), headers: jsonHeaders(target), body: undefined };
  forwardClientHeaders(built, target, 'openai-responses', call.request.headers, call.config.settings.forwardHeaders);
  let response: Awaited<ReturnType<typeof undiciRequest>>;
  try {
    response = await undiciRequest(built.url, {
      dispatcher: call.deps.outbound.dispatcher,
      method: 'POST',
      headers: built.headers,
      // A number the client wrote beyond a double's precision goes out as written (see exact-numbers.ts).
      body: restoreExactNumbers(JSON.stringify(body)),
      headersTimeout: provider.timeouts.firstByteMs,
      bodyTimeout: provider.timeouts.idleMs,
      signal: AbortSignal.timeout(provider.timeouts.totalMs),
    });
  } catch {
    throw unreachable(provider.name);
  }
  const text = await response.body.text().catch(() => {
    throw unreachable(provider.name);
  });
  if (response.statusCode !== 200) {
    const adapter = adapterFor(provider.vendor.format);
    throw adapter ? adapter.parseError(response.statusCode, response.headers, text, target) : upstreamErrorFromBody(provider.name, response.statusCode, response.headers, text);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const tokens = (parsed as { input_tokens?: unknown } | null)?.input_tokens;
  if (typeof tokens !== 'number') throw gatewayError('invalid_upstream_response', `${provider.name}: upstream sent a count without input_tokens`);
  return { text, tokens };
}

/**
 * The count of a Responses body: OpenAI's own (`POST {base}/responses/input_tokens`, the client's body with the
 * upstream's model name, its answer as OpenAI wrote it); Anthropic's (`POST {base}/messages/count_tokens`, the
 * request translated as a Messages request to it would be); else an ESTIMATE from tollgate's tokenizer on the
 * translated request, as for budget reservations. A body an input guardrail could block or redact is never sent
 * upstream to be counted: it is estimated.
 */
async function countResponsesInput(turn: Turn, model: string, guarded: boolean, call: CountCall): Promise<string> {
  const { config, request } = call;
  const body = turn.body;
  const target = countingTarget(config, model, headerString(request, CLIENT_PROVIDER_KEY_HEADER), turn.pinned);
  const openai = target?.provider.vendor.id === 'openai';
  // A previous Response another provider keeps is found there only (/v1/responses refuses it the same way).
  if (openai && turn.pinned && turn.previousError && turn.pinned.provider !== target?.provider.name) throw turn.previousError;
  if (target && openai && !guarded) {
    return (await upstreamCount(target, joinUrl(target.provider.baseUrl, '/responses/input_tokens'), { ...withoutTranslatedReasoning(body), model: target.model }, call)).text;
  }
  const { request: chat, untranslatable } = canonicalRequest(body, model, turn.previousError, { geminiSignatures: keepsGeminiFields(config, model) });
  // What only the Responses API takes is refused for a direct name of another format, as /v1/responses refuses it; a
  // route (which may reach OpenAI) and an OpenAI model counted here get the estimate of the rest.
  if (untranslatable && !openai && !isRouteName(config.routes, model)) throw untranslatable;
  if (target && !openai && !guarded) {
    const messages = messagesBody(withoutLogprobs({ ...chat, stream: false } as ChatCompletionRequest), target.model);
    const countBody = Object.fromEntries(ANTHROPIC_COUNT_FIELDS.filter((field) => messages[field] !== undefined).map((field) => [field, messages[field]]));
    const counted = await upstreamCount(target, joinUrl(target.provider.baseUrl, '/messages/count_tokens'), countBody, call);
    return countAnswer(counted.tokens);
  }
  return countAnswer(countPromptTokens(chat.messages, chat.tools));
}

/**
 * OpenAI's "Get input token counts" (`POST /v1/responses/input_tokens`, the SDK's `client.responses.inputTokens.count`):
 * `{"object": "response.input_tokens", "input_tokens": n}` for a Responses body. The body is read as /v1/responses
 * reads it (its 400s), a `previous_response_id` or `item_reference` tollgate kept for the caller is expanded as for a
 * new turn, and the key rules are the model call's (a `tg-` key live and allowed the model); counting costs nothing,
 * so no budget or rate limit. Errors are in OpenAI's shape (the app's error handler).
 */
export function registerInputTokensRoutes(app: FastifyInstance, deps: HttpDeps): void {
  for (const prefix of ['/v1', '']) {
    app.post(`${prefix}/responses/input_tokens`, async (request, reply) => {
      const config = deps.config.current();
      const read = readResponsesRequest(request.body);
      // tollgate's own `fallbacks` is accepted as on /v1/responses; the count is the named model's.
      takeRequestFallbacks(read as ChatCompletionRequest);
      const model = resolveModelName(config, read.model);
      const key = checkVirtualKey(deps.governance, config, isRemoteClient(request, config.settings), presentedCredential(request), model);
      const team = key?.team ? (deps.governance.getTeamRecord(key.team) ?? null) : null;
      const turn = startTurn(deps, request, read, config);
      const answer = await countResponsesInput(turn, model, inputGuarded(config, key, team), { config, request, deps });
      return reply.type('application/json').send(answer);
    });
  }
}
