/**
 * The keyword deny list: words or phrases matched case-insensitively, as whole words, in any script. All keywords
 * are compiled once into one regex (an alternation, longest first so that `credit card number` wins over
 * `credit card`), with Unicode-aware boundaries: a keyword must not be preceded or followed by a letter, a mark, a
 * digit or `_` of any script, so `ass` does not match in `class` nor `café` in `cafés`. Whitespace inside a phrase
 * matches any run of 1 to 8 whitespace characters. Case folding is the regex engine's simple Unicode case folding;
 * text is not NFC-normalised (a keyword written precomposed does not match its decomposed spelling).
 *
 * Linear time: the leading look-behind lets only the first character of a word start a match, and each
 * alternative is a literal of bounded length.
 */
import type { Detection } from '../types.js';

const WORD_CHAR = '[\\p{L}\\p{M}\\p{N}_]';
/** The longest keyword accepted, in characters. */
export const MAX_KEYWORD_LENGTH = 200;

export interface KeywordMatcher {
  re: RegExp;
  /** The longest text one keyword can match (its length, with whitespace runs at their longest). */
  window: number;
}

function escapeRegex(text: string): string {
  return text.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
}

export function compileKeywords(keywords: readonly string[]): KeywordMatcher | null {
  const cleaned = [...new Set(keywords.map((keyword) => keyword.trim().normalize('NFC')).filter((keyword) => keyword.length > 0))];
  if (cleaned.length === 0) return null;
  for (const keyword of cleaned) {
    if (keyword.length > MAX_KEYWORD_LENGTH) throw new Error(`guardrail keyword longer than ${MAX_KEYWORD_LENGTH} characters: ${JSON.stringify(keyword.slice(0, 40))}…`);
  }
  cleaned.sort((a, b) => b.length - a.length);
  const alternatives = cleaned.map((keyword) => keyword.split(/\s+/).map(escapeRegex).join('\\s{1,8}'));
  const re = new RegExp(`(?<!${WORD_CHAR})(?:${alternatives.join('|')})(?!${WORD_CHAR})`, 'giu');
  const window = Math.max(...cleaned.map((keyword) => keyword.length + 7 * (keyword.split(/\s+/).length - 1)));
  return { re, window };
}

export function detectKeywords(text: string, from: number, matcher: KeywordMatcher | null): Detection[] {
  if (matcher === null) return [];
  const found: Detection[] = [];
  const { re } = matcher;
  re.lastIndex = from;
  for (;;) {
    const match = re.exec(text);
    if (match === null) break;
    found.push({ start: match.index, end: match.index + match[0].length, kind: 'keyword' });
  }
  return found;
}
