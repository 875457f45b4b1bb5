/**
 * Phone numbers. A bare run of digits is never a phone number here: order numbers, timestamps, amounts and IDs are
 * runs of digits too, and redacting them would wreck answers. A match needs the shape people write phone numbers in:
 *
 * - international: `+`, then 7 to 15 digits in all (E.164's range), with at most one separator between digits
 *   (space, `-`, `.`, or a parenthesised area code: `+1 (415) 555-2671`, `+44 20 7946 0958`, `+33612345678`);
 * - national: groups of digits separated by single spaces, dashes or dots, with either a parenthesised area code
 *   (`(415) 555-2671`) or at least two separators (`415-555-2671`, `020 7946 0958`, `06 12 34 56 78`), 7 to 15
 *   digits in all, groups after the first of 2 to 5 digits.
 *
 * National shapes that are usually something else are dropped: dates (`2024-01-15`, `15.01.2024`: groups of 4-2-2
 * or 2-2-4; and a date followed by a time or a sequence number: `2024-01-15 10:30`, `2024-01-15-001`), US social
 * security numbers (3-2-4: the national_id detector's), dotted quads (`192.168.10.20`), and numbers grouped in
 * thousands (`1 234 567`, `12.345.678`).
 * It is a heuristic: a phone number written without separators is missed, and a reference number written like a
 * phone number is caught.
 *
 * Linear time: both patterns consume exactly one digit per repetition (the separators are optional single
 * characters between digits), so there is one way to parse a run and backtracking is bounded by the repetition
 * count; a match starts only where no digit, letter, `+` or digit-separator precedes it.
 */
import { forEachMatch } from '../match-loop.js';
import type { Detection } from '../types.js';

/** `+`, a digit, then 6 to 14 more digits, each optionally preceded by one separator or a parenthesis. */
const INTERNATIONAL = /(?<![\w+])\+\d(?:(?:[ .-]|\)[ .-]?|[ .-]?\()?\d){6,14}(?!\d)/g;
/** An optional parenthesised area code or a first group, then groups separated by single separators. */
const NATIONAL = /(?<![\w+.,)-])(?<!\d[ .-])(?:\(\d{1,5}\) ?|\d{1,5}[ .-])\d{2,5}(?:[ .-]\d{2,5}){0,4}(?![\d]|[.-]\d)/g;

/** The longest phone number either pattern matches, with room for its separators. */
export const PHONE_WINDOW = 40;

function digitCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) count++;
  }
  return count;
}

function balancedParentheses(text: string): boolean {
  let depth = 0;
  for (const char of text) {
    if (char === '(') depth++;
    else if (char === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

/**
 * Whether a match starts with a date written with `-` or `.` (`2024-01-15`, `15.01.2024`, `01-15-2024`): the groups
 * after it are then a time or a sequence number (`2024-01-15 10:30`, `2024-01-15-001`), not the rest of a phone number.
 */
function startsWithDate(match: string, groups: readonly string[]): boolean {
  if (groups.length < 4) return false;
  const [a = '', b = '', c = ''] = groups;
  const first = match[a.length];
  if ((first !== '-' && first !== '.') || match[a.length + b.length + 1] !== first) return false;
  const day = (value: string) => Number(value) >= 1 && Number(value) <= 31;
  const month = (value: string) => Number(value) >= 1 && Number(value) <= 12;
  const year = (value: string) => value.length === 4 && Number(value) >= 1900 && Number(value) <= 2099;
  if (year(a) && b.length === 2 && c.length === 2) return month(b) && day(c);
  if (year(c) && a.length === 2 && b.length === 2) return (day(a) && month(b)) || (month(a) && day(b));
  return false;
}

/** National shapes that are usually dates, addresses or grouped amounts, not phone numbers. */
function looksLikeSomethingElse(match: string): boolean {
  if (match.startsWith('(')) return false;
  const groups = match.split(/[ .-]/);
  const lengths = groups.map((group) => group.length);
  const separators = new Set(match.replace(/\d/g, ''));
  if (groups.length === 3 && ['4,2,2', '2,2,4', '3,2,4'].includes(lengths.join())) return true;
  if (startsWithDate(match, groups)) return true;
  if (groups.length === 4 && separators.size === 1 && separators.has('.') && lengths.every((n) => n <= 3)) return true;
  if (separators.size === 1 && !separators.has('-') && lengths[0]! <= 3 && lengths.slice(1).every((n) => n === 3)) return true;
  return false;
}

export function detectPhones(text: string, from = 0): Detection[] {
  const international: Detection[] = [];
  forEachMatch(INTERNATIONAL, text, from, (match) => {
    if (!balancedParentheses(match[0])) return null;
    international.push({ start: match.index, end: match.index + match[0].length, kind: 'phone' });
    return match.index + match[0].length;
  });
  const found = [...international];
  // Both walks go left to right, so one pointer into the international matches finds any overlap in linear time.
  let next = 0;
  forEachMatch(NATIONAL, text, from, (match) => {
    const value = match[0];
    const digits = digitCount(value);
    if (digits < 7 || digits > 15) return null;
    const separators = value.length - digits - (value.startsWith('(') ? 2 : 0);
    if (!value.startsWith('(') && separators < 2) return null;
    if (looksLikeSomethingElse(value)) return null;
    const start = match.index;
    const end = start + value.length;
    // The international pattern already took numbers written with `+`; a national match inside one is the same number.
    while (next < international.length && international[next]!.end <= start) next++;
    const other = international[next];
    if (other !== undefined && other.start < end) return end;
    found.push({ start, end, kind: 'phone' });
    return end;
  });
  return found.sort((a, b) => a.start - b.start);
}
