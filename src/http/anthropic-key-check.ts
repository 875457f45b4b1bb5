import { GatewayError } from '../errors.js';
import type { GovernanceStore } from '../governance/governance-store.js';
import { modelAllowed } from '../governance/model-patterns.js';
import { VIRTUAL_KEY_PREFIX } from '../governance/types.js';

function unauthorized(message: string, code: string): GatewayError {
  return new GatewayError({ status: 401, type: 'authentication_error', code, message });
}

/**
 * The auth stage's rules (src/stages/auth.ts) for a route that does not run the pipeline: count_tokens costs
 * nothing, so it needs no budget or rate limit, but a `tg-` key must still be a live key allowed the model, and
 * `require_virtual_key` still refuses anonymous callers.
 */
export function checkVirtualKey(governance: GovernanceStore, requireKey: boolean, credential: string | null, model: string): void {
  if (!credential || !credential.startsWith(VIRTUAL_KEY_PREFIX)) {
    if (requireKey) throw unauthorized('A virtual key is required: send it as x-api-key or Authorization: Bearer <key>.', 'missing_api_key');
    return;
  }
  const key = governance.findKeyBySecret(credential);
  if (!key) throw unauthorized('Incorrect API key provided: the virtual key is not known (it may have been rotated or deleted).', 'invalid_api_key');
  if (key.disabled) throw unauthorized(`The virtual key '${key.name}' is disabled.`, 'key_disabled');
  if (key.expires_at && Date.parse(key.expires_at) <= Date.now()) throw unauthorized(`The virtual key '${key.name}' expired at ${key.expires_at}.`, 'key_expired');
  if (!modelAllowed(key.models, model)) {
    throw new GatewayError({
      status: 403,
      type: 'permission_error',
      code: 'model_not_allowed',
      param: 'model',
      message: `The virtual key '${key.name}' may not use model '${model}'. Allowed: ${key.models.join(', ')}.`,
    });
  }
}
