/**
 * IBANs, compact (`DE89370400440532013000`) or grouped by single spaces (`DE89 3704 0044 0532 0130 00`), in upper or
 * lower case. The candidate is cut to the exact length the country's IBAN has (so trailing words are not swallowed),
 * must end at a word boundary, and must pass `ibantools`' validation: the country's BBAN format and the ISO 13616
 * mod-97 check digits (and, for some countries, the national account checksum too).
 *
 * Linear time: a candidate starts only where no letter or digit precedes it, and is at most 34 characters plus
 * one space between each.
 */
import { getCountrySpecifications, isValidIBAN } from 'ibantools';
import { forEachMatch } from '../match-loop.js';
import type { Detection } from '../types.js';

/** Two letters, two check digits, then 11 to 30 more characters, each optionally preceded by one space. */
const IBAN_CANDIDATE = /(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?: ?[A-Za-z0-9]){11,30}/g;
const ALNUM = /[A-Za-z0-9]/;

/** 34 characters and a space after every one but the last, at most. */
export const IBAN_WINDOW = 67;

/** IBAN length by country code, read once from the library's country table. */
const LENGTHS: ReadonlyMap<string, number> = new Map(
  Object.entries(getCountrySpecifications())
    .filter(([, spec]) => typeof spec.chars === 'number' && spec.chars > 0)
    .map(([code, spec]) => [code, spec.chars as number]),
);

export function detectIbans(text: string, from = 0): Detection[] {
  const found: Detection[] = [];
  forEachMatch(IBAN_CANDIDATE, text, from, (match) => {
    const country = match[0].slice(0, 2).toUpperCase();
    const length = LENGTHS.get(country);
    if (length === undefined) return null;
    // Walk the candidate, taking exactly `length` characters and skipping single spaces.
    let compact = '';
    let i = match.index;
    while (compact.length < length && i < match.index + match[0].length) {
      const char = text[i]!;
      if (char !== ' ') compact += char;
      i++;
    }
    if (compact.length !== length) return null;
    if (i < text.length && ALNUM.test(text[i]!)) return null;
    if (!isValidIBAN(compact.toUpperCase())) return null;
    found.push({ start: match.index, end: i, kind: 'iban', subtype: country });
    return i;
  });
  return found;
}
