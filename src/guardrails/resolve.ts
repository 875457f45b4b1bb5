/**
 * Overlapping findings (an email inside a keyword match, a card number that also looks like a phone number) are
 * settled deterministically: the strongest action wins (block > redact > flag), then the longest span, then the
 * earliest start, then the rule listed first. Findings are taken greedily in that order and each is kept only if it
 * overlaps none already kept.
 *
 * Whether a finding is kept depends only on the findings it overlaps, directly or through a chain. The stream guard
 * relies on this: it releases text only up to a point that no finding crosses, and the findings left of such a point
 * resolve the same whether or not the rest of the text is known.
 */
import type { Finding, GuardrailAction } from './types.js';

const STRENGTH: Record<GuardrailAction, number> = { block: 3, redact: 2, flag: 1 };

/** The kept findings, sorted by start. `ruleOrder` gives each rule's position in the config (unknown rules last). */
export function resolveOverlaps(findings: readonly Finding[], ruleOrder: ReadonlyMap<string, number> = new Map()): Finding[] {
  const byStart = [...findings].sort((a, b) => a.start - b.start || b.end - a.end);
  let overlapping = false;
  for (let i = 1; i < byStart.length && !overlapping; i++) overlapping = byStart[i]!.start < byStart[i - 1]!.end;
  if (!overlapping) return byStart;

  const order = (finding: Finding) => ruleOrder.get(finding.rule) ?? Number.MAX_SAFE_INTEGER;
  const ranked = [...byStart].sort(
    (a, b) =>
      STRENGTH[b.action] - STRENGTH[a.action] || b.end - b.start - (a.end - a.start) || a.start - b.start || order(a) - order(b) || a.end - b.end,
  );
  // One flag per code unit of the covered range: checking and marking a span costs its length, and spans are short.
  const origin = byStart[0]!.start;
  const covered = new Uint8Array(byStart.reduce((end, finding) => Math.max(end, finding.end), origin) - origin);
  const kept: Finding[] = [];
  for (const finding of ranked) {
    let free = true;
    for (let i = finding.start - origin; i < finding.end - origin && free; i++) free = covered[i] === 0;
    if (!free) continue;
    covered.fill(1, finding.start - origin, finding.end - origin);
    kept.push(finding);
  }
  return kept.sort((a, b) => a.start - b.start);
}
