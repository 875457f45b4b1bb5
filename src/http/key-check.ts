import type { GovernanceStore } from '../governance/governance-store.js';
import { anonymousRule, checkVirtualKey as check } from '../governance/key-check.js';
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { RuntimeConfig } from '../core/config.js';
import type { VirtualKeyRecord } from '../core/identity.js';
import { isRemoteClient } from './client-address.js';

/**
 * For endpoints that answer without the pipeline (token counting costs nothing, so no budget or rate limit):
 * the auth stage's key rules, throwing the refusal; the caller's key record (null for an anonymous call). A key allowed a route through its targets may count tokens
 * for it, as it may chat with it; with no model (a list), the key alone is checked.
 */
export function checkVirtualKey(governance: GovernanceStore, config: RuntimeConfig, fromRemote: boolean, credential: string | null, model: string | null): VirtualKeyRecord | null {
  const result = check(governance, anonymousRule(config.settings, fromRemote), credential, model, { operation: 'chat', config, fallbacks: [], metadata: null });
  if (!result.ok) throw result.error;
  return result.key;
}

/**
 * The guard of a model list (`GET .../models`): what a key may see is what it may use, so the key rules apply as
 * to a call that names no model: a `tg-` key that is unknown, disabled, rotated or expired gets 401, and so does a
 * request without one under `require_virtual_key` or from another machine under `anonymous_access: loopback`.
 * Thrown in the route's own error shape by its scope.
 */
export function modelListGuard(deps: { governance: GovernanceStore; config: { current(): RuntimeConfig } }, credentialOf: (request: FastifyRequest) => string | null): preHandlerAsyncHookHandler {
  return async (request) => {
    const config = deps.config.current();
    checkVirtualKey(deps.governance, config, isRemoteClient(request, config.settings), credentialOf(request), null);
  };
}
