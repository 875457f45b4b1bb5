/**
 * Guardrails: detectors for PII, secrets, prompt injection and deny lists, compiled from a rule list into a scanner,
 * and a stream guard that applies it to streamed answers. Pure functions over strings; the pipeline stage that
 * applies them to requests and answers lives elsewhere.
 */
export type { Detect, Detection, DetectorKind, Finding, GuardrailAction, GuardrailAppliesTo, GuardrailDirection } from './types.js';
export type {
  EmailRule,
  GuardrailRule,
  GuardrailRuleBase,
  IbanRule,
  KeywordRule,
  NationalIdFormat,
  NationalIdRule,
  PaymentCardRule,
  PhoneRule,
  PromptInjectionRule,
  RegexRule,
  SecretRule,
} from './rules.js';
export { guardrailRuleSchema, guardrailRulesSchema } from './rules.js';
export { compileGuardrails, LOOK_AHEAD_MARGIN, MAX_DEFAULT_LOOK_BEHIND, type CompiledRule, type Scanner } from './scanner.js';
export { resolveOverlaps } from './resolve.js';
export {
  createStreamGuard,
  DEFAULT_MAX_HOLD,
  STREAM_CONTEXT,
  StreamGuards,
  type StreamGuard,
  type StreamGuardOptions,
  type StreamGuardResult,
} from './stream-guard.js';
export { detectEmails } from './detectors/email.js';
export { detectPhones } from './detectors/phone.js';
export { cardBrand, detectPaymentCards, luhnValid, type PaymentCardOptions } from './detectors/payment-card.js';
export { detectIbans } from './detectors/iban.js';
export {
  BUILTIN_NATIONAL_ID_FORMATS,
  DEFAULT_NATIONAL_ID_FORMATS,
  detectNationalIds,
  validBsn,
  validDni,
  validSsn,
  type BuiltinNationalIdFormat,
} from './detectors/national-id.js';
export { detectSecrets, SECRET_TYPES, type SecretType } from './detectors/secret.js';
export { DEFAULT_INJECTION_THRESHOLD, detectPromptInjection } from './detectors/prompt-injection.js';
export { compileKeywords, detectKeywords, MAX_KEYWORD_LENGTH, type KeywordMatcher } from './detectors/keyword.js';
export { compilePattern, detectPatterns, MAX_PATTERN_LENGTH, UnsafePatternError, type CompiledPattern } from './detectors/regex-list.js';
