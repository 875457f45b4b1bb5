import { GatewayError } from '../errors.js';
import { quoteInput } from '../quote-input.js';
import type { GovernanceStore } from './governance-store.js';
import { modelAllowed } from './model-patterns.js';
import { VIRTUAL_KEY_PREFIX, type VirtualKeyRecord } from './types.js';

export type KeyRejection = 'unknown_key' | 'disabled_key' | 'expired_key' | 'missing_key' | 'model_not_allowed';

export type KeyCheck = { ok: true; key: VirtualKeyRecord | null } | { ok: false; reason: KeyRejection; keyId: string | null; error: GatewayError };

function unauthorized(message: string, code: string): GatewayError {
  return new GatewayError({ status: 401, type: 'invalid_request_error', code, message });
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

const REMOTE_NEEDS_KEY =
  'A virtual key is required for clients on other machines: send it as Authorization: Bearer <key> or x-api-key. ' +
  'Requests without one are served to clients on the gateway\'s own machine only, unless the operator sets ' +
  'settings.anonymous_access: any (or TOLLGATE_ANONYMOUS_ACCESS=any).';

/**
 * The virtual-key rules, in one place for the auth stage and for the few endpoints that answer without the
 * pipeline (token counting): a credential that looks like one of ours (`tg-...`) must be a live key allowed the
 * model in every mode; other credentials (or none) are anonymous (key null), which `require_virtual_key` refuses, and `anonymous_access: loopback` refuses from other machines.
 */
export function checkVirtualKey(governance: GovernanceStore, anonymous: AnonymousRule, credential: string | null, model: string): KeyCheck {
  const refuse = (reason: KeyRejection, keyId: string | null, error: GatewayError): KeyCheck => ({ ok: false, reason, keyId, error });
  if (!credential || !credential.startsWith(VIRTUAL_KEY_PREFIX)) {
    if (anonymous === 'allow') return { ok: true, key: null };
    if (anonymous === 'refuse-remote') return refuse('missing_key', null, unauthorized(REMOTE_NEEDS_KEY, 'virtual_key_required'));
    return refuse('missing_key', null, unauthorized('A virtual key is required: send it as Authorization: Bearer <key> or x-api-key.', 'missing_api_key'));
  }
  const key = governance.findKeyBySecret(credential);
  if (!key) return refuse('unknown_key', null, unauthorized('Incorrect API key provided: the virtual key is not known (it may have been rotated or deleted).', 'invalid_api_key'));
  if (key.disabled) return refuse('disabled_key', key.id, unauthorized(`The virtual key '${key.name}' is disabled.`, 'key_disabled'));
  if (key.expires_at && Date.parse(key.expires_at) <= Date.now()) {
    return refuse('expired_key', key.id, unauthorized(`The virtual key '${key.name}' expired at ${key.expires_at}.`, 'key_expired'));
  }
  if (!modelAllowed(key.models, model)) {
    return refuse(
      'model_not_allowed',
      key.id,
      new GatewayError({
        status: 403,
        type: 'permission_error',
        code: 'model_not_allowed',
        param: 'model',
        message: `The virtual key '${key.name}' may not use model '${quoteInput(model)}'. Allowed: ${key.models.join(', ')}.`,
      }),
    );
  }
  return { ok: true, key };
}
