/**
 * National identity numbers. Built-in formats, each with the validity rules the issuer publishes:
 *
 * - `us_ssn`: `AAA-GG-SSSS` (dashes or single spaces, not a bare 9-digit run, which is too often something else);
 *   area 000, 666 and 900-999, group 00 and serial 0000 are never issued, nor the two numbers published in
 *   advertising (078-05-1120, 219-09-9999).
 * - `uk_nino`: National Insurance number, `AB123456C` or `AB 12 34 56 C`, upper case; the prefix letters D, F, I, Q,
 *   U, V (and O second) are never used, nor the prefixes BG, GB, KN, NK, NT, TN, ZZ; the suffix is A to D.
 * - `es_dni`: Spanish DNI (8 digits and a check letter) and NIE (X, Y or Z, 7 digits and a check letter); the letter
 *   is `TRWAGMYFPDXBNJZSQVHLCKE[number mod 23]`.
 * - `nl_bsn`: Dutch citizen service number, 9 digits (or `1234.56.782`) passing the 11-proof. Not on by default:
 *   one random 9-digit number in eleven passes it, so it suits deployments that expect Dutch data.
 *
 * Operator formats (`{ name, pattern }`) are regexes compiled with the same checks as the regex deny list.
 *
 * Linear time: fixed-length patterns, each starting only where no letter or digit precedes it.
 */
import { forEachMatch } from '../match-loop.js';
import type { Detection } from '../types.js';
import { detectPatterns, type CompiledPattern } from './regex-list.js';
import { withFields } from '../../core/with-fields.js';

export type BuiltinNationalIdFormat = 'us_ssn' | 'uk_nino' | 'es_dni' | 'nl_bsn';
export const BUILTIN_NATIONAL_ID_FORMATS: readonly BuiltinNationalIdFormat[] = ['us_ssn', 'uk_nino', 'es_dni', 'nl_bsn'];
/** The formats a `national_id` rule checks when it names none. */
export const DEFAULT_NATIONAL_ID_FORMATS: readonly BuiltinNationalIdFormat[] = ['us_ssn', 'uk_nino', 'es_dni'];

/** The longest built-in match (`AB 12 34 56 C`, `1234.56.782`), with a margin. */
export const NATIONAL_ID_WINDOW = 16;

const SSN = /(?<![\w-])(\d{3})([- ])(\d{2})\2(\d{4})(?![\w-])/g;
const NINO = /(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]) ?(\d{2}) ?(\d{2}) ?(\d{2}) ?([A-D])(?![A-Za-z0-9])/g;
const DNI = /(?<![A-Za-z0-9])([XYZxyz]?)(\d{7,8})-?([A-Za-z])(?![A-Za-z0-9])/g;
const BSN = /(?<![\w.])(\d{4})(\.?)(\d{2})\2(\d{3})(?![\w]|\.\d)/g;

const DNI_LETTERS = 'TRWAGMYFPDXBNJZSQVHLCKE';
const NINO_UNUSED_PREFIXES = new Set(['BG', 'GB', 'KN', 'NK', 'NT', 'TN', 'ZZ']);

export function validSsn(area: string, group: string, serial: string): boolean {
  const areaNumber = Number(area);
  if (areaNumber === 0 || areaNumber === 666 || areaNumber >= 900) return false;
  if (group === '00' || serial === '0000') return false;
  const whole = `${area}${group}${serial}`;
  return whole !== '078051120' && whole !== '219099999';
}

export function validDni(prefix: string, digits: string, letter: string): boolean {
  if (prefix === '' ? digits.length !== 8 : digits.length !== 7) return false;
  const lead = prefix === '' ? '' : String('XYZ'.indexOf(prefix.toUpperCase()));
  return DNI_LETTERS[Number(lead + digits) % 23] === letter.toUpperCase();
}

/** The 11-proof: 9·d1 + 8·d2 + … + 2·d8 − 1·d9 is a multiple of 11 (and not all zeros). */
export function validBsn(digits: string): boolean {
  if (digits.length !== 9 || /^0+$/.test(digits)) return false;
  let sum = 0;
  for (let i = 0; i < 8; i++) sum += (9 - i) * Number(digits[i]);
  sum -= Number(digits[8]);
  return sum % 11 === 0;
}

function walk(found: Detection[], re: RegExp, text: string, from: number, subtype: string, valid: (match: RegExpExecArray) => boolean): void {
  forEachMatch(re, text, from, (match) => {
    if (!valid(match)) return null;
    const end = match.index + match[0].length;
    found.push({ start: match.index, end, kind: 'national_id', subtype });
    return end;
  });
}

export function detectNationalIds(
  text: string,
  from = 0,
  formats: readonly BuiltinNationalIdFormat[] = DEFAULT_NATIONAL_ID_FORMATS,
  custom: readonly CompiledPattern[] = [],
): Detection[] {
  const found: Detection[] = [];
  if (formats.includes('us_ssn')) walk(found, SSN, text, from, 'us_ssn', (m) => validSsn(m[1]!, m[3]!, m[4]!));
  if (formats.includes('uk_nino')) walk(found, NINO, text, from, 'uk_nino', (m) => !NINO_UNUSED_PREFIXES.has(m[1]!) && (m[0].length === 9 || m[0].length === 13));
  if (formats.includes('es_dni')) walk(found, DNI, text, from, 'es_dni', (m) => validDni(m[1]!, m[2]!, m[3]!));
  if (formats.includes('nl_bsn')) walk(found, BSN, text, from, 'nl_bsn', (m) => validBsn(m[1]! + m[3]! + m[4]!));
  for (const detection of detectPatterns(text, from, custom)) found.push(withFields(detection, { kind: 'national_id' as const }));
  return found.sort((a, b) => a.start - b.start || b.end - a.end);
}
