import type { GovernanceStore } from '../governance/governance-store.js';
import { anonymousRule, checkVirtualKey as check } from '../governance/key-check.js';
import type { RuntimeConfig } from '../core/config.js';

/**
 * For endpoints that answer without the pipeline (token counting costs nothing, so no budget or rate limit):
 * the auth stage's key rules, throwing the refusal. A key allowed a route through its targets may count tokens
 * for it, as it may chat with it.
 */
export function checkVirtualKey(governance: GovernanceStore, config: RuntimeConfig, fromRemote: boolean, credential: string | null, model: string): void {
  const result = check(governance, anonymousRule(config.settings, fromRemote), credential, model, { config, fallbacks: [], metadata: null });
  if (!result.ok) throw result.error;
}
