/**
 * `compileGuardrails(rules)` turns a rule list into a `Scanner`, once per config version: patterns and keyword lists
 * are compiled and checked there (an unsafe operator regex fails the config, not a request), so scanning a text is
 * only running the detectors.
 */
import { detectEmails, EMAIL_WINDOW } from './detectors/email.js';
import { detectIbans, IBAN_WINDOW } from './detectors/iban.js';
import { compileKeywords, detectKeywords } from './detectors/keyword.js';
import { DEFAULT_NATIONAL_ID_FORMATS, detectNationalIds, NATIONAL_ID_WINDOW } from './detectors/national-id.js';
import { detectPaymentCards, PAYMENT_CARD_WINDOW } from './detectors/payment-card.js';
import { detectPhones, PHONE_WINDOW } from './detectors/phone.js';
import { DEFAULT_INJECTION_THRESHOLD, detectPromptInjection, PROMPT_INJECTION_WINDOW } from './detectors/prompt-injection.js';
import { compilePattern, detectPatterns } from './detectors/regex-list.js';
import { detectSecrets, SECRET_TYPES, SECRET_WINDOW } from './detectors/secret.js';
import { resolveOverlaps } from './resolve.js';
import type { GuardrailRule } from './rules.js';
import type { Detection, DetectorKind, Finding, GuardrailAction, GuardrailAppliesTo, GuardrailDirection } from './types.js';
import { withFields } from '../core/with-fields.js';

/** The stream guard's default look-behind never exceeds this many UTF-16 code units. */
export const MAX_DEFAULT_LOOK_BEHIND = 256;
/**
 * Added to the longest rule window for the default look-behind: the characters after a match that the patterns'
 * look-ahead boundary checks read (two at most: `(?![.-]\d)`), with room to spare.
 */
export const LOOK_AHEAD_MARGIN = 8;

/** One rule, compiled: its detector bound to its options. */
export interface CompiledRule {
  name: string;
  kind: DetectorKind;
  action: GuardrailAction;
  appliesTo: GuardrailAppliesTo;
  placeholder: string;
  /** The longest text that must be seen at once for this rule to recognise a match (see the stream guard). */
  window: number;
  detect: (text: string, from: number) => Detection[];
}

export interface Scanner {
  readonly rules: readonly CompiledRule[];
  /**
   * The findings in `text` of the rules that apply to `direction` (every rule when absent), overlaps resolved
   * (block > redact > flag, then longest), sorted by start.
   */
  scan(text: string, direction?: GuardrailDirection): Finding[];
  /**
   * Every finding of the applicable rules starting at or after `from`, overlaps NOT resolved; the text before `from`
   * is context for boundary checks only. The stream guard's primitive; `scan` is `resolve(detect(text, 0))`.
   */
  detect(text: string, from?: number, direction?: GuardrailDirection): Finding[];
  /** Keeps the non-overlapping winners of `findings` (see `resolveOverlaps`), with this scanner's rule order. */
  resolve(findings: readonly Finding[]): Finding[];
  /**
   * `text` with each `redact` finding's span replaced by its rule's placeholder. Other findings are left alone;
   * overlapping findings are resolved first, so `redact(text, scanner.detect(text))` is safe too.
   */
  redact(text: string, findings: readonly Finding[]): string;
  /** Whether any rule applies to `direction`: a caller can skip the work entirely when none does. */
  appliesTo(direction: GuardrailDirection): boolean;
  /** The stream guard's default look-behind for `direction`: the largest rule window, capped at 256. */
  lookBehind(direction?: GuardrailDirection): number;
}

function defaultAppliesTo(rule: GuardrailRule): GuardrailAppliesTo {
  return rule.applies_to ?? (rule.kind === 'prompt_injection' ? 'input' : 'both');
}

function compileRule(rule: GuardrailRule, checkTrades: boolean): Omit<CompiledRule, 'name' | 'action' | 'appliesTo' | 'placeholder' | 'kind'> {
  switch (rule.kind) {
    case 'email':
      return { window: EMAIL_WINDOW, detect: detectEmails };
    case 'phone':
      return { window: PHONE_WINDOW, detect: detectPhones };
    case 'payment_card': {
      const options = { requireKnownIin: rule.require_known_iin === true };
      return { window: PAYMENT_CARD_WINDOW, detect: (text, from) => detectPaymentCards(text, from, options) };
    }
    case 'iban':
      return { window: IBAN_WINDOW, detect: detectIbans };
    case 'national_id': {
      const formats = [...(rule.formats ?? DEFAULT_NATIONAL_ID_FORMATS)];
      const custom = (rule.custom_formats ?? []).map((format) => compilePattern(format.name, format.pattern, false, MAX_DEFAULT_LOOK_BEHIND, checkTrades));
      const window = custom.length > 0 ? MAX_DEFAULT_LOOK_BEHIND : NATIONAL_ID_WINDOW;
      return { window, detect: (text, from) => detectNationalIds(text, from, formats, custom) };
    }
    case 'secret': {
      const types = [...(rule.types ?? SECRET_TYPES)];
      return { window: SECRET_WINDOW, detect: (text, from) => detectSecrets(text, from, types) };
    }
    case 'prompt_injection': {
      const threshold = rule.threshold ?? DEFAULT_INJECTION_THRESHOLD;
      return { window: PROMPT_INJECTION_WINDOW, detect: (text, from) => detectPromptInjection(text, from, threshold) };
    }
    case 'keyword': {
      const matcher = compileKeywords(rule.keywords);
      return { window: matcher?.window ?? 0, detect: (text, from) => detectKeywords(text, from, matcher) };
    }
    case 'regex': {
      const maxRepeat = rule.max_match_length ?? MAX_DEFAULT_LOOK_BEHIND;
      const patterns = rule.patterns.map((pattern, index) => compilePattern(`pattern_${index}`, pattern, rule.case_insensitive === true, maxRepeat, checkTrades));
      return { window: rule.max_match_length ?? MAX_DEFAULT_LOOK_BEHIND, detect: (text, from) => detectPatterns(text, from, patterns) };
    }
  }
}

/**
 * Compiles a rule list (already checked by `guardrailRulesSchema`, or built in code). Throws an `UnsafePatternError`
 * naming the pattern when an operator regex is refused, and an `Error` on a duplicate rule name.
 *
 * `stored`: rules checked when they were written (a key's or team's, stored by an earlier version), compiled for a
 * request. Repetitions in a row that trade characters (traded-repetitions.ts) were accepted before that check came:
 * such a stored rule keeps running as it did (bounded) rather than fail every request of its key after an upgrade.
 * Every write, the config's and the admin API's, is checked in full.
 */
export function compileGuardrails(rules: readonly GuardrailRule[], options: { stored?: boolean } = {}): Scanner {
  const checkTrades = options.stored !== true;
  const names = new Set<string>();
  const compiled: CompiledRule[] = [];
  for (const rule of rules) {
    if (names.has(rule.name)) throw new Error(`duplicate guardrail rule name ${JSON.stringify(rule.name)}`);
    names.add(rule.name);
    if (rule.disabled === true) continue;
    compiled.push({
      name: rule.name,
      kind: rule.kind,
      action: rule.action,
      appliesTo: defaultAppliesTo(rule),
      placeholder: rule.placeholder ?? `[REDACTED:${rule.kind}]`,
      ...compileRule(rule, checkTrades),
    });
  }
  const ruleOrder = new Map(compiled.map((rule, index) => [rule.name, index]));
  const placeholders = new Map(compiled.map((rule) => [rule.name, rule.placeholder]));
  const forDirection = new Map<GuardrailDirection | undefined, CompiledRule[]>([
    [undefined, compiled],
    ['input', compiled.filter((rule) => rule.appliesTo !== 'output')],
    ['output', compiled.filter((rule) => rule.appliesTo !== 'input')],
  ]);

  const detect = (text: string, from = 0, direction?: GuardrailDirection): Finding[] => {
    const findings: Finding[] = [];
    for (const rule of forDirection.get(direction)!) {
      for (const detection of rule.detect(text, from)) findings.push(withFields(detection, { rule: rule.name, action: rule.action }));
    }
    return findings;
  };
  const resolve = (findings: readonly Finding[]) => resolveOverlaps(findings, ruleOrder);

  return {
    rules: compiled,
    detect,
    resolve,
    scan: (text, direction) => resolve(detect(text, 0, direction)),
    redact(text, findings) {
      const parts: string[] = [];
      let cursor = 0;
      for (const finding of resolve(findings)) {
        if (finding.action !== 'redact') continue;
        parts.push(text.slice(cursor, finding.start), placeholders.get(finding.rule) ?? `[REDACTED:${finding.kind}]`);
        cursor = finding.end;
      }
      if (cursor === 0) return text;
      parts.push(text.slice(cursor));
      return parts.join('');
    },
    appliesTo: (direction) => forDirection.get(direction)!.length > 0,
    lookBehind: (direction) =>
      Math.min(MAX_DEFAULT_LOOK_BEHIND, LOOK_AHEAD_MARGIN + Math.max(0, ...forDirection.get(direction)!.map((rule) => rule.window))),
  };
}
