/**
 * Secrets: credentials recognisable by their published shape.
 *
 * | type                | shape                                                                 |
 * | ------------------- | --------------------------------------------------------------------- |
 * | `anthropic`         | `sk-ant-<kind>-` and 20+ of `[A-Za-z0-9_-]`                            |
 * | `openai`            | `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` and 20+ of `[A-Za-z0-9_-]` holding a digit |
 * | `aws_access_key_id` | `AKIA` or `ASIA` and 16 of `[A-Z0-9]`                                  |
 * | `aws_secret_access_key` | 40 of `[A-Za-z0-9/+]` right after its label (`aws_secret_access_key =`, `"SecretAccessKey": `) or its access key ID (`AKIA…,`) |
 * | `github`            | `ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_` and 36 alphanumerics, `github_pat_` and 22+ |
 * | `slack`             | `xoxa-`/`xoxb-`/`xoxp-`/`xoxr-`/`xoxs-` and 10+ of `[A-Za-z0-9-]`      |
 * | `google_api_key`    | `AIza` and 35 of `[A-Za-z0-9_-]`                                       |
 * | `stripe`            | `sk_live_`/`rk_live_` and 16+ alphanumerics                            |
 * | `jwt`               | `eyJ…` `.` `eyJ…` and an optional `.signature` (base64url)              |
 * | `private_key`       | `-----BEGIN … PRIVATE KEY-----` through its `-----END … PRIVATE KEY-----` line |
 *
 * An AWS secret access key has no shape of its own (40 base64 characters, like a git commit hash), so it is found by
 * what it is written next to, as credentials files, environment variables, the CLI's JSON and the console's CSV
 * write it; only the key itself is reported, not its label.
 *
 * Every token must stand alone (no token character right before or after it). A JWT matches from its header and
 * payload alone, so a token cut mid-signature (or mid-stream) is still caught. A private key block with no END line
 * within 16 KiB is treated as running to the end of its PEM body (the following run of base64, whitespace and PEM
 * header characters), so a truncated key is redacted too and a stream holds it back until its end is known.
 *
 * Linear time: bounded token patterns starting only at a token boundary; private keys are found by one pass for
 * BEGIN lines and a cached forward search for END lines (each END line and each body run is searched for once,
 * however many BEGIN lines precede it).
 */
import { forEachMatch } from '../match-loop.js';
import type { Detection } from '../types.js';

export type SecretType = 'anthropic' | 'openai' | 'aws_access_key_id' | 'aws_secret_access_key' | 'github' | 'slack' | 'google_api_key' | 'stripe' | 'jwt' | 'private_key';
export const SECRET_TYPES: readonly SecretType[] = ['anthropic', 'openai', 'aws_access_key_id', 'aws_secret_access_key', 'github', 'slack', 'google_api_key', 'stripe', 'jwt', 'private_key'];

/** The length of an AWS secret access key, which ends its pattern (the label before it is not reported). */
const AWS_SECRET_LENGTH = 40;
/** An optional quote around a label or a value, escaped when the text is itself inside a JSON string. */
const QUOTE = String.raw`(?:\\?["'])?`;
const AWS_SECRET_VALUE = String.raw`${QUOTE}[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])`;
const AWS_SECRET = new RegExp(
  [
    String.raw`(?<![A-Za-z0-9])(?:aws[_.-]?secret(?:[_.-]?access)?[_.-]?key|secret[_.-]?access[_.-]?key)${QUOTE}\s{0,4}[:=>]{1,2}\s{0,4}${AWS_SECRET_VALUE}`,
    String.raw`(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}${QUOTE}[\s,;:|=]{1,4}${AWS_SECRET_VALUE}`,
  ].join('|'),
  'gi',
);

const TOKENS: ReadonlyArray<{ type: Exclude<SecretType, 'private_key'>; re: RegExp; valid?: (token: string) => boolean; tail?: number }> = [
  { type: 'anthropic', re: /(?<![\w-])sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_-]{20,200}(?![\w-])/g },
  { type: 'openai', re: /(?<![\w-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,200}(?![\w-])/g, valid: (token) => /\d/.test(token) },
  { type: 'aws_access_key_id', re: /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g },
  // A placeholder (40 x's, a run of letters) is not a key: a real one mixes letters with digits, `/` or `+`.
  { type: 'aws_secret_access_key', re: AWS_SECRET, tail: AWS_SECRET_LENGTH, valid: (match) => /[A-Za-z]/.test(match.slice(-AWS_SECRET_LENGTH)) && /[0-9/+]/.test(match.slice(-AWS_SECRET_LENGTH)) },
  { type: 'github', re: /(?<![\w-])(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,120})(?![\w-])/g },
  { type: 'slack', re: /(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,200}(?![\w-])/g },
  { type: 'google_api_key', re: /(?<![\w-])AIza[A-Za-z0-9_-]{35}(?![\w-])/g },
  { type: 'stripe', re: /(?<![\w-])[sr]k_live_[A-Za-z0-9]{16,200}(?![\w-])/g },
  { type: 'jwt', re: /(?<![\w-])eyJ[A-Za-z0-9_-]{5,1000}\.eyJ[A-Za-z0-9_-]{5,8000}(?:\.[A-Za-z0-9_-]{0,2000})?(?![\w-])/g },
];

/**
 * What every token above holds (their literal starts, and the AWS secret's label), in any case: a looser test than
 * theirs. Their patterns start with a look-behind, which keeps V8 from searching for the literal, so each tried every
 * position of a text (about 25 ns a type for a sentence); most texts hold none of these and are not walked at all.
 */
const MAY_HOLD_TOKEN = /sk-|akia|asia|secret|gh[pousr]_|github_pat_|xox[abprs]-|aiza|[sr]k_live_|eyj/i;

const BEGIN = /-----BEGIN [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----/g;
const END = /-----END [A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----/g;
/**
 * Characters of a PEM body: base64, whitespace, the `Proc-Type: 4,ENCRYPTED` / `DEK-Info:` header lines, and
 * backslashes, for a key written inside a JSON or code string, its line breaks escaped (`\n`): a model writing the
 * key into a tool call's arguments, where a body that stopped at the first `\` left all of it unredacted.
 */
const PEM_BODY = /[^A-Za-z0-9+/=\s:,\\-]/g;
/** How far after a BEGIN line its END line may be: an RSA-8192 key in PEM is about 6.4 KB. */
const MAX_KEY_BLOCK = 16_384;

/**
 * The longest text that must be seen before a secret is recognised: 208 for the longest token patterns (a Stripe or
 * Slack key). Longer matches (a JWT's payload, a private key's body) are recognised from their start and then held
 * whole, so they need no larger window.
 */
export const SECRET_WINDOW = 212;

function detectPrivateKeys(text: string, from: number, found: Detection[]): void {
  // Cached searches: the next END line at or after some position, and the end of the body run containing a position.
  let nextEnd: { index: number; end: number } | null | undefined;
  let bodyRunEnd = -1;
  forEachMatch(BEGIN, text, from, (begin) => {
    const headerEnd = begin.index + begin[0].length;
    if (nextEnd !== null && (nextEnd === undefined || nextEnd.index < headerEnd)) {
      END.lastIndex = headerEnd;
      const match = END.exec(text);
      nextEnd = match === null ? null : { index: match.index, end: match.index + match[0].length };
    }
    let end: number;
    if (nextEnd != null && nextEnd.index - headerEnd <= MAX_KEY_BLOCK) {
      end = nextEnd.end;
    } else {
      if (bodyRunEnd < headerEnd) {
        PEM_BODY.lastIndex = headerEnd;
        const stop = PEM_BODY.exec(text);
        bodyRunEnd = stop === null ? text.length : stop.index;
      }
      // The body run ends at its last non-space character: the whitespace after a key is not part of it, nor a
      // backslash, which escapes what follows the run (`\"` closing a string): redacted, it would leave a bare quote.
      end = Math.min(bodyRunEnd, headerEnd + MAX_KEY_BLOCK);
      while (end > headerEnd && (/\s/.test(text[end - 1]!) || text[end - 1] === '\\')) end--;
    }
    found.push({ start: begin.index, end, kind: 'secret', subtype: 'private_key' });
    return end;
  });
}

export function detectSecrets(text: string, from = 0, types: readonly SecretType[] = SECRET_TYPES): Detection[] {
  const found: Detection[] = [];
  const tokens = MAY_HOLD_TOKEN.test(text) ? TOKENS : [];
  for (const { type, re, valid, tail } of tokens) {
    if (!types.includes(type)) continue;
    forEachMatch(re, text, from, (match) => {
      if (valid !== undefined && !valid(match[0])) return null;
      const end = match.index + match[0].length;
      found.push({ start: tail === undefined ? match.index : end - tail, end, kind: 'secret', subtype: type });
      return end;
    });
  }
  if (types.includes('private_key')) detectPrivateKeys(text, from, found);
  return found.sort((a, b) => a.start - b.start || b.end - a.end);
}
