import type { GatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';
import type { GovernanceStore } from './governance-store.js';
import type { RuntimeConfig } from '../core/config.js';
import { refusedModel, type ModelRefusal, type RuleSubject } from './key-models.js';
import { modelAllowed } from '../routing/model-patterns.js';
import { VIRTUAL_KEY_PREFIX } from './types.js';
import { type VirtualKeyRecord } from '../core/identity.js';
import { gatewayError, type ErrorCode } from '../core/errors.js';

export type KeyRejection = 'unknown_key' | 'disabled_key' | 'expired_key' | 'missing_key' | 'model_not_allowed';

export type KeyCheck = { ok: true; key: VirtualKeyRecord | null } | { ok: false; reason: KeyRejection; keyId: string | null; error: GatewayError };

function unauthorized(message: string, code: ErrorCode): GatewayError {
  return gatewayError(code, message);
}

/**
 * What happens to a request without a virtual key: it goes on, or is refused because every request needs a key
 * (`require_virtual_key`), or because it comes from another machine and anonymous access is loopback-only.
 */
export type AnonymousRule = 'allow' | 'refuse' | 'refuse-remote';

/**
 * The rule for one request. Zero-config serves the person on the machine; a client elsewhere would spend the
 * operator's provider keys, so it needs a virtual key unless the operator opened access (`anonymous_access: any`).
 */
export function anonymousRule(settings: { requireVirtualKey: boolean; anonymousAccess: 'loopback' | 'any' }, fromRemote: boolean): AnonymousRule {
  if (settings.requireVirtualKey) return 'refuse';
  return fromRemote && settings.anonymousAccess !== 'any' ? 'refuse-remote' : 'allow';
}

/** What the pipeline knows of a request beyond its model: the config it runs on, its fallbacks and metadata. */
export interface RequestScope {
  /** What the request asks for: a routing rule applies to one kind (see RuleFacts.operation). */
  operation: 'chat' | 'embeddings';
  config: RuntimeConfig;
  fallbacks: readonly string[];
  metadata: Record<string, unknown> | null;
}

function ruleSubject(governance: GovernanceStore, key: VirtualKeyRecord, scope: RequestScope): RuleSubject {
  return {
    operation: scope.operation,
    key: { id: key.id, name: key.name, metadata: key.metadata },
    team: () => {
      const team = key.team ? governance.getTeamRecord(key.team) : undefined;
      return team ? { id: team.id, name: team.name } : null;
    },
    metadata: scope.metadata,
  };
}

function listRefusal(patterns: readonly string[], model: string): ModelRefusal | null {
  return modelAllowed(patterns, model) ? null : { param: 'model', requested: model, route: false, reaches: model, rule: null };
}

/** The 403 names what the key does not allow and how the request would get there. */
function notAllowed(key: VirtualKeyRecord, refusal: ModelRefusal): GatewayError {
  const requested = quoteInput(refusal.requested);
  const allowed = ` Allowed: ${key.models.join(', ')}.`;
  let message: string;
  if (refusal.route) {
    const what = refusal.param === 'model' ? `route '${requested}'` : `fallback route '${requested}'`;
    const via = refusal.rule ? `Routing rule '${refusal.rule}' may send this request to ${what}, which` : `The ${what}`;
    message =
      `${via} can reach '${quoteInput(refusal.reaches)}', which the virtual key '${key.name}' does not allow.${allowed} ` +
      'A key may use a route it lists by name, or one whose every target and fallback it allows.';
  } else if (refusal.rule) {
    message = `Routing rule '${refusal.rule}' may send this request to '${requested}', which the virtual key '${key.name}' does not allow.${allowed}`;
  } else if (refusal.param !== 'model') {
    message = `The virtual key '${key.name}' may not use '${requested}', named in '${refusal.param}'.${allowed}`;
  } else {
    message = `The virtual key '${key.name}' may not use model '${requested}'.${allowed}`;
  }
  return gatewayError('model_not_allowed', message, { param: refusal.param });
}

/**
 * Why a known key may not be used now (disabled, or past its expiry), or null. Auth asks it of the key a request
 * presents; the spend stage asks it again of the stored record before each further paid call a request makes (an
 * agent run's next turn), so a key revoked meanwhile pays for nothing more.
 */
export function deadKey(governance: GovernanceStore, key: VirtualKeyRecord): { reason: 'disabled_key' | 'expired_key'; error: GatewayError } | null {
  if (key.disabled) return { reason: 'disabled_key', error: unauthorized(`The virtual key '${key.name}' is disabled.`, 'key_disabled') };
  if (key.expires_at && Date.parse(key.expires_at) <= governance.nowMs()) {
    return { reason: 'expired_key', error: unauthorized(`The virtual key '${key.name}' expired at ${key.expires_at}.`, 'key_expired') };
  }
  return null;
}

/** The refusal of a call made for a request whose key was deleted after auth let the request through. */
export function deletedKey(key: VirtualKeyRecord): GatewayError {
  return unauthorized(`Incorrect API key provided: the virtual key '${key.name}' was deleted.`, 'invalid_api_key');
}

const REMOTE_NEEDS_KEY =
  'A virtual key is required for clients on other machines: send it as Authorization: Bearer <key> or x-api-key. ' +
  'Requests without one are served only to clients on the gateway\'s own machine that address it as localhost or a loopback address, unless the operator sets ' +
  'settings.anonymous_access: any (or TOLLGATE_ANONYMOUS_ACCESS=any).';

/**
 * The virtual-key rules, in one place for the auth stage and for the few endpoints that answer without the
 * pipeline (token counting): a credential that looks like one of ours (`tg-...`) must be a live key allowed the
 * model in every mode; other credentials (or none) are anonymous (key null), which `require_virtual_key` refuses, and `anonymous_access: loopback` refuses from other machines.
 * With a `scope` (the pipeline's auth stage), the key's `models` are checked against all the request can reach
 * (see key-models.ts); without one (endpoints that call no model), against the name alone.
 */
export function checkVirtualKey(
  governance: GovernanceStore,
  anonymous: AnonymousRule,
  credential: string | null,
  /** The model the request asks for; null for an endpoint that calls no model (MCP tools): the key alone is checked. */
  model: string | null,
  scope?: RequestScope,
): KeyCheck {
  const refuse = (reason: KeyRejection, keyId: string | null, error: GatewayError): KeyCheck => ({ ok: false, reason, keyId, error });
  if (!credential || !credential.startsWith(VIRTUAL_KEY_PREFIX)) {
    if (anonymous === 'allow') return { ok: true, key: null };
    if (anonymous === 'refuse-remote') return refuse('missing_key', null, unauthorized(REMOTE_NEEDS_KEY, 'virtual_key_required'));
    return refuse('missing_key', null, unauthorized('A virtual key is required: send it as Authorization: Bearer <key> or x-api-key.', 'missing_api_key'));
  }
  const key = governance.findKeyBySecret(credential);
  if (!key) return refuse('unknown_key', null, unauthorized('Incorrect API key provided: the virtual key is not known (it may have been rotated or deleted).', 'invalid_api_key'));
  const dead = deadKey(governance, key);
  if (dead) return refuse(dead.reason, key.id, dead.error);
  if (key.models.length > 0 && model !== null) {
    const refusal = scope ? refusedModel(scope.config, key.models, model, scope.fallbacks, ruleSubject(governance, key, scope)) : listRefusal(key.models, model);
    if (refusal) return refuse('model_not_allowed', key.id, notAllowed(key, refusal));
  }
  // Let through: the key is in use (its last_used_at), whatever the request meets after this.
  governance.keyUsed(key.id);
  return { ok: true, key };
}
