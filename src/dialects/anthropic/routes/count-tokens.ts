import type { IncomingHttpHeaders } from 'node:http';
import { restoreExactNumbers } from '../../../exact-numbers.js';
import { forwardClientHeaders } from '../../../providers/forward-headers.js';
import { withBaseQuery } from '../../../providers/base-url.js';
import { request as undiciRequest, type Dispatcher } from 'undici';
import type { GuardrailRuleConfig, RuntimeConfig } from '../../../core/config.js';
import type { TeamRecord, VirtualKeyRecord } from '../../../core/identity.js';
import { canonicalModelName } from '../model-name.js';
import { isRouteName } from '../../../routing/route-patterns.js';
import type { MessagesRequest } from '../parse-request.js';
import { readCanonical } from '../lenient.js';
import type { GatewayError } from '../../../core/errors.js';
import { countPromptTokens } from '../../../tokens/tokenizer.js';
import { authHeaders } from '../../../providers/auth-headers.js';
import type { Target } from '../../../core/provider.js';
import { anthropicError } from '../../../providers/anthropic/index.js';
import { adapterFor } from '../../../providers/registry.js';
import { resolveDirectTarget, splitModelName } from '../../../routing/resolve-target.js';
import { gatewayError } from '../../../core/errors.js';

/**
 * The Anthropic-format target that can count this model's tokens exactly, or null: only a direct
 * `<provider>/<model>` name of an Anthropic-format provider with a key has an upstream count_tokens. An unknown
 * provider fails here with the same 404 a message would get.
 */
function countingTarget(config: RuntimeConfig, model: string, clientKey: string | null): Target | null {
  if (isRouteName(config.routes, model)) return null;
  const parts = splitModelName(model);
  const provider = parts ? config.providers.get(parts.provider) : undefined;
  if (provider && provider.vendor.format !== 'anthropic') return null;
  if (provider && provider.keys.length === 0 && !clientKey) return null;
  const target = resolveDirectTarget(config, model, clientKey);
  return target.apiKey === null ? null : target;
}

/**
 * Whether a direct `<provider>/<model>` name is served in Anthropic's format, so a message to it passes the client's
 * body through whatever it holds: an Anthropic provider, or Claude on Vertex AI or Bedrock (the adapter's nativeFormat).
 * A name that cannot be resolved (no key) is not: its message fails before any upstream too.
 */
function directAnthropic(config: RuntimeConfig, model: string, clientKey: string | null): boolean {
  const parts = splitModelName(model);
  const provider = config.providers.get(parts?.provider ?? '');
  if (!provider) return false;
  if (provider.vendor.format === 'anthropic') return true;
  const nativeFormat = adapterFor(provider.vendor.format)?.nativeFormat;
  if (!nativeFormat) return false;
  try {
    return nativeFormat(resolveDirectTarget(config, model, clientKey)) === 'anthropic';
  } catch {
    return false;
  }
}

function unreachable(provider: string): GatewayError {
  return gatewayError('upstream_unreachable', `${provider}: the upstream could not be reached to count tokens.`);
}

/**
 * Anthropic's own count (`POST {base}/messages/count_tokens`) for the client's body, the model renamed to the
 * upstream's, with the headers a message to that provider gets: the client's `anthropic-version` and
 * `anthropic-beta` and the operator's `forward_headers` over the vendor's defaults, never over the operator's own
 * provider headers or the credential (forwardClientHeaders, as the call stage does).
 */
async function upstreamCount(target: Target, body: MessagesRequest, request: CountRequest): Promise<string> {
  const { provider } = target;
  const url = withBaseQuery(`${provider.baseUrl.replace(/\/$/, '')}/messages/count_tokens`, provider.baseQuery);
  const { fallbacks: _fallbacks, ...forwarded } = body;
  const built = {
    method: 'POST' as const,
    url,
    headers: { 'content-type': 'application/json', ...provider.vendor.defaultHeaders, ...provider.headers } as Record<string, string>,
    body: undefined,
  };
  forwardClientHeaders(built, target, 'anthropic', request.clientHeaders, request.config.settings.forwardHeaders);
  let response: Awaited<ReturnType<typeof undiciRequest>>;
  try {
    response = await undiciRequest(url, {
      dispatcher: request.dispatcher,
      method: 'POST',
      headers: { ...built.headers, ...authHeaders(provider.vendor.auth, target.apiKey) },
      // A number the client wrote beyond a double's precision goes out as written (see exact-numbers.ts).
      body: restoreExactNumbers(JSON.stringify({ ...forwarded, model: target.model })),
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
  if (response.statusCode !== 200) throw anthropicError(provider.name, response.statusCode, response.headers, text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const tokens = (parsed as { input_tokens?: unknown } | null)?.input_tokens;
  if (typeof tokens !== 'number') {
    throw gatewayError('invalid_upstream_response', `${provider.name}: upstream sent a count without input_tokens`);
  }
  // Anthropic's answer as it wrote it: fields beside input_tokens (context_management's original_input_tokens, and
  // whatever it adds later) are the client's to read, as from Anthropic itself.
  return text;
}

export interface CountRequest {
  config: RuntimeConfig;
  /**
   * An input guardrail that blocks or redacts could act on this caller's request (see inputGuarded): the body is then
   * never sent upstream to be counted (a blocked card number would leave through count_tokens); it is estimated.
   */
  inputGuarded: boolean;
  body: MessagesRequest;
  clientProviderKey: string | null;
  /** The client's request headers: those meant for Anthropic (version, betas) and the operator's forward_headers go along. */
  clientHeaders: Readonly<IncomingHttpHeaders>;
  /** The gateway's outbound dispatcher: Anthropic's count goes out like every upstream call (proxy, CAs). */
  dispatcher: Dispatcher;
}

/** A rule that changes or stops what reaches the upstream from the client's side. */
function actsOnInput(rule: GuardrailRuleConfig): boolean {
  return rule.action !== 'flag' && rule.applies_to !== 'output';
}

/**
 * Whether an input rule that blocks or redacts may apply to a count made with this key: one at the top level, or one
 * the key or its team adds. (A direct `<provider>/<model>` name, the only kind counted upstream, has no route rules.)
 * Rules a key skips are not subtracted: the count is estimated whenever such a rule exists at all.
 */
export function inputGuarded(config: RuntimeConfig, key: VirtualKeyRecord | null, team: TeamRecord | null): boolean {
  return config.guardrails.rules.some(actsOnInput) || (key?.guardrails?.rules ?? []).some(actsOnInput) || (team?.guardrails?.rules ?? []).some(actsOnInput);
}

/**
 * The JSON answer to a count_tokens body. Anthropic models are counted by Anthropic, whose answer the client gets
 * unchanged. Every other model gets `{"input_tokens": n}`, an ESTIMATE from the gateway's tokenizer (o200k) on the
 * translated request, as for budget reservations: other vendors' tokenizers differ by some percent, and no common
 * count endpoint exists across them.
 */
export async function countInputTokens(request: CountRequest): Promise<string> {
  const { config, body, clientProviderKey } = request;
  const model = canonicalModelName(config, body.model);
  // Translating first refuses what the messages route would refuse, whichever way the count is made.
  const { request: canonical, untranslatable } = readCanonical({ ...body, stream: false }, model, {});
  const target = request.inputGuarded ? null : countingTarget(config, model, clientProviderKey);
  if (target) return upstreamCount(target, body, request);
  // What the canonical form cannot express only an Anthropic upstream takes: a direct name of another format is
  // refused as the messages route refuses it; a route (which may reach Anthropic) gets the estimate of the rest.
  if (untranslatable && !isRouteName(config.routes, model) && !directAnthropic(config, model, clientProviderKey)) throw untranslatable;
  return JSON.stringify({ input_tokens: countPromptTokens(canonical.messages, canonical.tools) });
}
