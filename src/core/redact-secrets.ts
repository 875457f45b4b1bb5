/** What a redacted secret is replaced with. */
export const REDACTED = '[REDACTED]';

/**
 * Secrets redacted from every kept body, whatever the operator configured: provider API keys by their well-known
 * shapes, tollgate virtual keys, bearer tokens and AWS access key ids.
 */
const BUILT_IN_SECRETS = [
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/g,
  /\btg-[A-Za-z0-9_-]{16,}/g,
  /\bAIza[0-9A-Za-z_-]{30,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bgsk_[A-Za-z0-9]{20,}/g,
  /\bxai-[A-Za-z0-9]{20,}/g,
  /\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{8,}/g,
];

const compiled = new WeakMap<readonly string[], RegExp[]>();

/** The operator's redaction patterns (`settings.log_bodies.redact`), compiled once per config. */
function operatorPatterns(patterns: readonly string[]): RegExp[] {
  let regexps = compiled.get(patterns);
  if (!regexps) {
    regexps = patterns.map((pattern) => new RegExp(pattern, 'g'));
    compiled.set(patterns, regexps);
  }
  return regexps;
}

/** A model name or an upstream's message: the built-in shapes only (the operator's patterns are for people's text). */
const NO_PATTERNS: readonly string[] = [];

/** What every built-in secret pattern starts with. */
const SECRET_PREFIXES = /sk-|tg-|AIza|AKIA|ASIA|gsk_|xai-|[Bb]earer/;

/** The shortest text a built-in secret pattern can match (`Bearer ` and eight characters). */
const SHORTEST_SECRET = 15;

/**
 * `text` with the built-in secrets and the operator's patterns (`settings.log_bodies.redact`) replaced, for the
 * short strings of a request that reach the log, traces and alerts whether bodies are kept or not: the `user` and
 * `metadata` tags, the model name, an error message. A client that pastes a key into one of them (or an upstream
 * that echoes one in its error) must not put it in front of everyone who reads the log.
 */
export function redactSecrets(text: string, patterns: readonly string[] = NO_PATTERNS): string {
  let out = text;
  // One test of the patterns' prefixes first: a model name or a tag almost never holds one.
  if (text.length >= SHORTEST_SECRET && SECRET_PREFIXES.test(text)) for (const pattern of BUILT_IN_SECRETS) out = out.replace(pattern, REDACTED);
  if (patterns.length > 0) for (const pattern of operatorPatterns(patterns)) out = out.replace(pattern, REDACTED);
  return out;
}

