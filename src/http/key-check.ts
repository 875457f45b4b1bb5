import type { GovernanceStore } from '../governance/governance-store.js';
import { checkVirtualKey as check } from '../governance/key-check.js';

/**
 * For endpoints that answer without the pipeline (token counting costs nothing, so no budget or rate limit):
 * the auth stage's key rules, throwing the refusal.
 */
export function checkVirtualKey(governance: GovernanceStore, requireKey: boolean, credential: string | null, model: string): void {
  const result = check(governance, requireKey, credential, model);
  if (!result.ok) throw result.error;
}
