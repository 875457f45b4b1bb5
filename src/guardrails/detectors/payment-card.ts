/**
 * Payment card numbers: 13 to 19 digits, optionally grouped by single spaces or dashes (`4111 1111 1111 1111`,
 * `4111-1111-1111-1111`), passing the Luhn check. The brand is looked up from the issuer prefix (IIN) and reported
 * as the subtype; with `requireKnownIin` a number whose prefix matches no major brand is not reported (fewer false
 * positives on long reference numbers, at the cost of missing smaller networks). A run of one repeated digit
 * (`0000 0000 0000 0000`) passes Luhn but is a placeholder, not a card: dropped.
 *
 * Linear time: one digit per repetition, each optionally preceded by one separator, so a run parses one way; a
 * match starts only where no digit or dash precedes it.
 */
import { forEachMatch } from '../match-loop.js';
import type { Detection } from '../types.js';

const CARD = /(?<![\d-])\d(?:[ -]?\d){12,18}(?!\d)/g;

/** 19 digits and 18 separators. */
export const PAYMENT_CARD_WINDOW = 37;

export interface PaymentCardOptions {
  /** Report only numbers whose prefix belongs to a major brand (default false: any Luhn-valid number). */
  requireKnownIin?: boolean;
}

/** The Luhn (mod 10) check over a string of digits (other characters, such as group separators, are skipped). */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  let double = false;
  for (let i = digits.length - 1; i >= 0; i--) {
    let digit = digits.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) continue;
    if (double) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
    double = !double;
  }
  return sum % 10 === 0;
}

/** The brand an issuer prefix belongs to, from the networks' published IIN ranges, or `unknown`. */
export function cardBrand(digits: string): string {
  const two = Number(digits.slice(0, 2));
  const three = Number(digits.slice(0, 3));
  const four = Number(digits.slice(0, 4));
  const six = Number(digits.slice(0, 6));
  if (digits.startsWith('4')) return 'visa';
  if ((two >= 51 && two <= 55) || (four >= 2221 && four <= 2720)) return 'mastercard';
  if (two === 34 || two === 37) return 'amex';
  if (four === 6011 || two === 65 || (three >= 644 && three <= 649) || (six >= 622126 && six <= 622925)) return 'discover';
  if (four >= 3528 && four <= 3589) return 'jcb';
  if (two === 36 || two === 38 || two === 39 || (three >= 300 && three <= 305) || four === 3095) return 'diners';
  if (two === 62 || two === 81) return 'unionpay';
  if (['50', '56', '57', '58', '67', '68', '69'].includes(digits.slice(0, 2)) || digits.startsWith('6')) return 'maestro';
  return 'unknown';
}

export function detectPaymentCards(text: string, from = 0, options: PaymentCardOptions = {}): Detection[] {
  const found: Detection[] = [];
  forEachMatch(CARD, text, from, (match) => {
    // Luhn first, on the match as it is: most candidates in a hostile run fail it, and it allocates nothing.
    if (!luhnValid(match[0])) return null;
    const digits = match[0].replace(/[ -]/g, '');
    if (/^(\d)\1*$/.test(digits)) return null;
    const brand = cardBrand(digits);
    if (options.requireKnownIin === true && brand === 'unknown') return null;
    const end = match.index + match[0].length;
    found.push({ start: match.index, end, kind: 'payment_card', subtype: brand });
    return end;
  });
  return found;
}
