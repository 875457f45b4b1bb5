/**
 * Email addresses: an ASCII local part (letters, digits, `._%+-`, and an apostrophe between two letters as in
 * `o'brien`; up to 64 characters as RFC 5321 allows), `@`, and a domain of dot-separated labels ending in an
 * alphabetic top-level domain of 2 to 24 letters. Catches plus tags (`jane+news@example.com`) and addresses in angle
 * brackets or quotes (a quote is not between two letters, so `'user@example.com'` matches without its quotes). Leaves
 * out quoted local parts, other apostrophes, IP-literal domains and internationalised addresses: rare in prose, and
 * each would cost precision. An address followed right away by `:` and a path (`git@github.com:acme/app.git`,
 * `deploy@build.example.com:/srv/app`) is an scp-style git remote or ssh target, not a mailbox: left alone, as
 * redacting it broke every clone command and `git remote -v` a coding agent read or wrote.
 *
 * Linear time: the local part must start where no local-part character precedes it (so inside one long word only
 * its first character is tried), and both parts are bounded; the domain is taken as one bounded run of
 * `[A-Za-z0-9.-]` and checked label by label in code instead of by a nested regex.
 */
import { forEachMatch } from '../match-loop.js';
import type { Detection } from '../types.js';

const MAX_DOMAIN = 189;
/**
 * Local part, `@`, and the domain run (at most 189 characters keeps the whole address within 254). An apostrophe
 * counts as a local-part character only between two letters, both in the part and in the look-behind (so the `b`
 * of `o'brien` cannot start a match either).
 */
const EMAIL = /(?<![A-Za-z0-9._%+-]|[A-Za-z]'(?=[A-Za-z]))(?:[A-Za-z0-9._%+-]|(?<=[A-Za-z])'(?=[A-Za-z])){1,64}@[A-Za-z0-9.-]{1,189}/g;
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const TLD = /^[A-Za-z]{2,24}$/;
const DOMAIN_CHAR = /[A-Za-z0-9.-]/;
/** What follows `user@host:` in an scp-style path: a path character, not a space or the end of a sentence. */
const REMOTE_PATH_CHAR = /[\w~/.-]/;

/** The longest address this detector matches (64 + 1 + 189): what the stream guard must hold back to see one whole. */
export const EMAIL_WINDOW = 254;

export function detectEmails(text: string, from = 0): Detection[] {
  const found: Detection[] = [];
  // Every address holds an '@'; most texts have none, and walking them costs the pattern a try at every word
  // (0.3-0.7 µs for a sentence, against a few ns for this look).
  if (text.indexOf('@', from) === -1) return found;
  forEachMatch(EMAIL, text, from, (match) => {
    const whole = match[0];
    const end = match.index + whole.length;
    // A domain run longer than the bound is not an address we can judge: reject rather than cut it.
    if (whole.length - whole.indexOf('@') - 1 === MAX_DOMAIN && end < text.length && DOMAIN_CHAR.test(text[end]!)) return null;
    const at = whole.indexOf('@');
    const local = whole.slice(0, at);
    // A sentence may end right after the address ("write to a@b.com."): trailing dots and hyphens are not part of it.
    const domain = whole.slice(at + 1).replace(/[.-]+$/, '');
    if (local.startsWith('.') || local.endsWith('.') || local.includes('..')) return null;
    const labels = domain.split('.');
    if (labels.length < 2) return null;
    if (!TLD.test(labels[labels.length - 1]!)) return null;
    if (!labels.every((label) => LABEL.test(label))) return null;
    const matchEnd = match.index + at + 1 + domain.length;
    if (text[matchEnd] === ':' && REMOTE_PATH_CHAR.test(text[matchEnd + 1] ?? '')) return null;
    found.push({ start: match.index, end: matchEnd, kind: 'email' });
    return matchEnd;
  });
  return found;
}
