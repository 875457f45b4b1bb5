/**
 * The shape of a guardrail rule as operators write it (snake_case, as in the YAML config), its TypeScript type, and
 * the zod schema that checks a rule list. The types are declared by hand so that they read as documentation; the
 * schema is typed against them, so the two cannot drift apart. Defaults are applied by `compileGuardrails`, not by
 * the schema, so a parsed config is exactly what was written.
 */
import { z } from 'zod';
import { BUILTIN_NATIONAL_ID_FORMATS, type BuiltinNationalIdFormat } from './detectors/national-id.js';
import { MAX_KEYWORD_LENGTH } from './detectors/keyword.js';
import { MAX_PATTERN_LENGTH } from './detectors/regex-list.js';
import { SECRET_TYPES, type SecretType } from './detectors/secret.js';
import type { GuardrailAction, GuardrailAppliesTo } from './types.js';

export type { BuiltinNationalIdFormat, SecretType };

/** What every rule has. */
export interface GuardrailRuleBase {
  /** Unique within the list; findings name it. */
  name: string;
  action: GuardrailAction;
  /** Default: `both` for every kind except `prompt_injection`, which defaults to `input`. */
  applies_to?: GuardrailAppliesTo | undefined;
  /** What a redacted span becomes; default `[REDACTED:<kind>]`. */
  placeholder?: string | undefined;
  /** Kept in the config but not compiled. */
  disabled?: boolean | undefined;
}

export interface EmailRule extends GuardrailRuleBase {
  kind: 'email';
}
export interface PhoneRule extends GuardrailRuleBase {
  kind: 'phone';
}
export interface PaymentCardRule extends GuardrailRuleBase {
  kind: 'payment_card';
  /** Report only numbers whose issuer prefix belongs to a major card brand (default false). */
  require_known_iin?: boolean | undefined;
}
export interface IbanRule extends GuardrailRuleBase {
  kind: 'iban';
}
/** An operator's national ID format: a regex (checked like the regex deny list) and the name findings report. */
export interface NationalIdFormat {
  name: string;
  pattern: string;
}
export interface NationalIdRule extends GuardrailRuleBase {
  kind: 'national_id';
  /** Built-in formats to check; default `us_ssn`, `uk_nino`, `es_dni` (`nl_bsn` is opt-in). `[]` for none. */
  formats?: BuiltinNationalIdFormat[] | undefined;
  custom_formats?: NationalIdFormat[] | undefined;
}
export interface SecretRule extends GuardrailRuleBase {
  kind: 'secret';
  /** Which secret types to look for; default all. */
  types?: SecretType[] | undefined;
}
export interface PromptInjectionRule extends GuardrailRuleBase {
  kind: 'prompt_injection';
  /** Combined heuristic score, in (0, 1], at which the text is reported; default 0.7. */
  threshold?: number | undefined;
}
export interface KeywordRule extends GuardrailRuleBase {
  kind: 'keyword';
  /** Words or phrases; case-insensitive, whole words. */
  keywords: string[];
}
export interface RegexRule extends GuardrailRuleBase {
  kind: 'regex';
  /** JavaScript regular expressions (Unicode mode), at most 512 characters each. */
  patterns: string[];
  case_insensitive?: boolean | undefined;
  /**
   * The longest text one match can span, for the stream guard's look-behind (default: the look-behind cap, 256).
   * Matches longer than the stream's look-behind are not guaranteed to be caught across chunk boundaries.
   */
  max_match_length?: number | undefined;
}

export type GuardrailRule =
  | EmailRule
  | PhoneRule
  | PaymentCardRule
  | IbanRule
  | NationalIdRule
  | SecretRule
  | PromptInjectionRule
  | KeywordRule
  | RegexRule;

/** The fields every rule has (exported so a list with further kinds, such as the gateway's config, shares them). */
export const guardrailRuleBase = {
  name: z.string().min(1).max(100).describe('Unique within the list; findings and events name it.'),
  action: z.enum(['block', 'redact', 'flag']).describe('`block` refuses the request or stops the answer, `redact` replaces the match, `flag` only reports it.'),
  applies_to: z
    .enum(['input', 'output', 'both'])
    .optional()
    .describe('Which side to check: the prompt, the answer, or both (default both; `input` for prompt_injection).'),
  placeholder: z.string().max(200).optional().describe('Replacement for a redacted match (default `[REDACTED:<kind>]`).'),
  disabled: z.boolean().optional().describe('Kept in the config but not applied (default false).'),
};

const operatorPattern = z.string().min(1).max(MAX_PATTERN_LENGTH, `at most ${MAX_PATTERN_LENGTH} characters`);

export const guardrailRuleSchema = z.discriminatedUnion('kind', [
  z.strictObject({ ...guardrailRuleBase, kind: z.literal('email') }),
  z.strictObject({ ...guardrailRuleBase, kind: z.literal('phone') }),
  z.strictObject({
    ...guardrailRuleBase,
    kind: z.literal('payment_card'),
    require_known_iin: z.boolean().optional().describe('Only numbers whose issuer prefix belongs to a major card brand (default false).'),
  }),
  z.strictObject({ ...guardrailRuleBase, kind: z.literal('iban') }),
  z.strictObject({
    ...guardrailRuleBase,
    kind: z.literal('national_id'),
    formats: z
      .array(z.enum(BUILTIN_NATIONAL_ID_FORMATS as [BuiltinNationalIdFormat, ...BuiltinNationalIdFormat[]]))
      .optional()
      .describe('Built-in formats: us_ssn, uk_nino, es_dni, nl_bsn (default us_ssn, uk_nino, es_dni).'),
    custom_formats: z
      .array(z.strictObject({ name: z.string().min(1).max(100), pattern: operatorPattern }))
      .optional()
      .describe('Operator formats: a name and a regex (refused if catastrophic, at most 512 characters).'),
  }),
  z.strictObject({
    ...guardrailRuleBase,
    kind: z.literal('secret'),
    types: z
      .array(z.enum(SECRET_TYPES as [SecretType, ...SecretType[]]))
      .min(1)
      .optional()
      .describe('Secret types to look for (default all).'),
  }),
  z.strictObject({
    ...guardrailRuleBase,
    kind: z.literal('prompt_injection'),
    threshold: z.number().gt(0).max(1).optional().describe('Heuristic score at which a text is reported, in (0, 1] (default 0.7).'),
  }),
  z.strictObject({
    ...guardrailRuleBase,
    kind: z.literal('keyword'),
    keywords: z.array(z.string().trim().min(1).max(MAX_KEYWORD_LENGTH)).min(1).describe('Words or phrases, matched case-insensitively as whole words.'),
  }),
  z.strictObject({
    ...guardrailRuleBase,
    kind: z.literal('regex'),
    patterns: z.array(operatorPattern).min(1).describe('Regular expressions (JavaScript, Unicode mode); refused if catastrophic.'),
    case_insensitive: z.boolean().optional(),
    max_match_length: z.number().int().positive().max(16_384).optional().describe('Longest text one match spans, for the stream look-behind (default 256).'),
  }),
]);

/** A rule list: names unique. Pattern safety is checked by `compileGuardrails`, which the config loader should call. */
export const guardrailRulesSchema = z
  .array(guardrailRuleSchema)
  .superRefine((rules, ctx) => {
    const seen = new Set<string>();
    rules.forEach((rule, index) => {
      if (seen.has(rule.name)) ctx.addIssue({ code: 'custom', path: [index, 'name'], message: `duplicate rule name ${JSON.stringify(rule.name)}` });
      seen.add(rule.name);
    });
  })
  .describe('Guardrail rules, applied in order; overlapping findings resolve block > redact > flag, then longest.');

// The schema parses to exactly the declared types (checked at compile time).
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const schemaMatchesTypes: Equal<z.output<typeof guardrailRuleSchema>, GuardrailRule> = true;
void schemaMatchesTypes;
