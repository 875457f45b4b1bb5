import type { GovernanceStore } from '../governance/governance-store.js';
import { anonymousRule, checkVirtualKey as check } from '../governance/key-check.js';
import type { Settings } from '../config/runtime.js';

/**
 * For endpoints that answer without the pipeline (token counting costs nothing, so no budget or rate limit):
 * the auth stage's key rules, throwing the refusal.
 */
export function checkVirtualKey(governance: GovernanceStore, settings: Settings, fromRemote: boolean, credential: string | null, model: string): void {
  const result = check(governance, anonymousRule(settings, fromRemote), credential, model);
  if (!result.ok) throw result.error;
}
