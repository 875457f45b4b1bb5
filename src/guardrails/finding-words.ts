/** How a guardrail action is said in the past tense, in event names and `guardrails` labels (`output:cards:redacted`). */
export const ACTION_PAST = { block: 'blocked', redact: 'redacted', flag: 'flagged' } as const;

/** What a rule kind found, in words for a block's message (never the matched text). */
const FOUND: Readonly<Record<string, string>> = {
  email: 'an email address',
  phone: 'a phone number',
  payment_card: 'a payment card number',
  iban: 'an IBAN',
  national_id: 'a national ID number',
  secret: 'a secret (an API key, a token or a private key)',
  prompt_injection: 'a likely prompt injection',
  keyword: 'a denied word',
  regex: 'text matching a denied pattern',
  moderation: 'content the moderation model classified as unsafe',
  json_schema: 'JSON that does not match the requested schema',
};

/** What a finding of `kind` is, for a message naming it: the kind's words, or the kind itself for one tollgate does not word. */
export function foundWords(kind: string): string {
  return Object.hasOwn(FOUND, kind) ? (FOUND[kind] as string) : `text the '${kind}' check refuses`;
}
