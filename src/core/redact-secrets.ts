/** What a redacted secret is replaced with. */
export const REDACTED = '[REDACTED]';

/**
 * Secrets redacted from every kept body, whatever the operator configured: provider API keys by their well-known
 * shapes, tollgate virtual keys, bearer tokens and AWS access key ids. (A provider's own configured key is also taken
 * out by its value from anything the provider answers: upstream-error.ts withoutCredential.)
 */
const BUILT_IN_SECRETS = [
  // Not \b: a key glued to a word by `_` (`my_sk-proj-...`) is still a key.
  /(?<![A-Za-z0-9])sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/g,
  /(?<![A-Za-z0-9])tg-[A-Za-z0-9_-]{16,}/g,
  /(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{30,}/g,
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /(?<![A-Za-z0-9])gsk_[A-Za-z0-9]{20,}/g,
  /(?<![A-Za-z0-9])xai-[A-Za-z0-9]{20,}/g,
  // Hugging Face, Perplexity, Cerebras, Fireworks, NVIDIA and Replicate keys.
  /(?<![A-Za-z0-9])(?:hf_|pplx-|csk-|fw_|nvapi-|r8_)[A-Za-z0-9_-]{20,}/g,
  // An authorization scheme's name is case-insensitive (`BEARER`, `bearer`).
  /(?<![A-Za-z0-9])bearer\s+[A-Za-z0-9._~+/=-]{8,}/gi,
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
const SECRET_PREFIXES = /sk-|tg-|AIza|AKIA|ASIA|gsk_|xai-|hf_|pplx-|csk-|fw_|nvapi-|r8_|bearer/i;

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


/**
 * `text` redacted, then cut to `max` characters: cut first, a secret that straddles the cut would no longer have
 * its pattern's shape and would be kept in part (`sk-proj-abcdefgh`). Only a bounded stretch past `max` is read,
 * enough for any secret that starts before the cut to keep its shape.
 */
export function redactedPrefix(text: string, max: number, patterns: readonly string[] = NO_PATTERNS): string {
  if (text.length <= max) return redactSecrets(text, patterns);
  return redactSecrets(text.slice(0, max + 512), patterns).slice(0, max);
}

/**
 * A request path with the built-in secrets redacted: the Gen AI clients name the model in the URL
 * (`/genai/v1beta/models/openai%2F<model>:generateContent`), so a key pasted into the model name is in the path too.
 * A percent-escape glued to it (`%2Fsk-...`) hides the key's shape from the patterns: a path with escapes is read
 * decoded, and shown decoded only when a secret was found in it (else it stays as the client sent it).
 */
export function redactPath(path: string): string {
  if (!path.includes('%')) return redactSecrets(path);
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    // A malformed escape: the path as sent.
    return redactSecrets(path);
  }
  const redacted = redactSecrets(decoded);
  return redacted === decoded ? path : redacted;
}
