/**
 * Payment card numbers: 13 to 19 digits, optionally grouped by single spaces or dashes (`4111 1111 1111 1111`,
 * `4111-1111-1111-1111`), passing the Luhn check. The brand is looked up from the issuer prefix (IIN) and reported
 * as the subtype; with `requireKnownIin` a number whose prefix matches no major brand is not reported (fewer false
 * positives on long reference numbers, at the cost of missing smaller networks). A run of one repeated digit
 * (`0000 0000 0000 0000`) passes Luhn but is a placeholder, not a card: dropped. So are numbers in ranges no network
 * issues cards from, which machines write long numbers in: a number starting with `1` (only UATP issues there, with 15
 * digits, and GPN from 1946) is an epoch timestamp in ms, µs or ns or a Snowflake ID (Discord, X), and one starting
 * with `20` a compact date-time (`20241129054413`); one in ten of them passes Luhn, so a log pasted into a prompt was
 * refused by a card rule nearly every time.
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

/** Whether no card network issues numbers like these (see the module comment). */
function outsideEveryNetwork(digits: string): boolean {
  if (digits.startsWith('20')) return true;
  return digits.startsWith('1') && digits.length !== 15 && !digits.startsWith('1946');
}

/** The fewest digits a card number has. */
const MIN_DIGITS = 13;

/**
 * The card number a candidate holds: the candidate itself, or else its longest prefix that ends before a separator
 * and still has 13 digits. The pattern is greedy, so a card followed by a short group of digits (an expiry date or a
 * CVC: `4242 4242 4242 4242 12/26`, `4111111111111111 123`) is matched with that group, fails Luhn, and, as no match
 * may start inside a run, the card itself was never tried. A prefix never ends inside a run of digits, so a number
 * inside a longer run is still not reported.
 */
function cardIn(candidate: string): string | null {
  if (luhnValid(candidate)) return candidate;
  let digits = 0;
  for (let i = 0; i < candidate.length; i++) if (candidate.charCodeAt(i) !== 32 && candidate.charCodeAt(i) !== 45) digits++;
  for (let i = candidate.length - 1; i > 0 && digits >= MIN_DIGITS; i--) {
    const code = candidate.charCodeAt(i);
    if (code !== 32 && code !== 45) {
      digits--;
      continue;
    }
    const prefix = candidate.slice(0, i);
    if (digits >= MIN_DIGITS && luhnValid(prefix)) return prefix;
  }
  return null;
}

export function detectPaymentCards(text: string, from = 0, options: PaymentCardOptions = {}): Detection[] {
  const found: Detection[] = [];
  forEachMatch(CARD, text, from, (match) => {
    // Luhn first, on the match as it is and then its prefixes that end at a separator: cheap, and most candidates
    // in a hostile run fail it.
    const card = cardIn(match[0]);
    if (card === null) return null;
    const digits = card.replace(/[ -]/g, '');
    if (/^(\d)\1*$/.test(digits) || outsideEveryNetwork(digits)) return null;
    const brand = cardBrand(digits);
    if (options.requireKnownIin === true && brand === 'unknown') return null;
    const end = match.index + card.length;
    found.push({ start: match.index, end, kind: 'payment_card', subtype: brand });
    return end;
  });
  return found;
}
