/**
 * The rules a caller runs: the top level's, then each level's changes (a route's, a team's, a key's) in turn, each
 * dropping the names it skips or redefines and adding its own. Shared by the guardrails stage (chat and embeddings
 * requests) and the MCP tool-result guard (tools called directly).
 */
import type { GuardrailRuleConfig, GuardrailsOverride } from '../core/config.js';

export function effectiveRules(
  base: readonly GuardrailRuleConfig[],
  layers: ReadonlyArray<GuardrailsOverride | null>,
): { rules: GuardrailRuleConfig[]; outputBlock: 'content_filter' | 'error' | null } {
  let rules = [...base];
  let outputBlock: 'content_filter' | 'error' | null = null;
  for (const layer of layers) {
    if (!layer) continue;
    const added = layer.rules ?? [];
    const dropped = new Set([...(layer.skip ?? []), ...added.map((rule) => rule.name)]);
    rules = rules.filter((rule) => !dropped.has(rule.name)).concat(added);
    outputBlock = layer.output_block ?? outputBlock;
  }
  return { rules: rules.filter((rule) => rule.disabled !== true), outputBlock };
}
