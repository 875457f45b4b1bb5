/**
 * The vocabulary of the guardrails library: what a detector reports (a `Detection`) and what a compiled rule
 * reports (a `Finding`: a detection plus the rule that asked for it and what to do about it).
 *
 * Spans are UTF-16 code-unit indices into the scanned string (`text.slice(start, end)` is the match), because
 * that is what JavaScript strings and RegExp indices are; a caller that needs byte offsets converts once.
 * A finding never carries the matched text itself: findings are logged and sent on the bus, and a redaction
 * rule whose finding repeated the secret would leak it there.
 */

/** What a rule does with what it finds. Their order of strength (block > redact > flag) settles overlaps. */
export type GuardrailAction = 'block' | 'redact' | 'flag';

/** Which side of the exchange a rule looks at: the prompt (`input`), the answer (`output`), or both. */
export type GuardrailDirection = 'input' | 'output';
export type GuardrailAppliesTo = GuardrailDirection | 'both';

/** The detectors this library ships. */
export type DetectorKind =
  | 'email'
  | 'phone'
  | 'payment_card'
  | 'iban'
  | 'national_id'
  | 'secret'
  | 'prompt_injection'
  | 'keyword'
  | 'regex';

/** One match of a detector. */
export interface Detection {
  start: number;
  end: number;
  kind: DetectorKind;
  /**
   * Which variety was found, where a detector has several: the card brand (`visa`, or `unknown`), the national ID
   * format (`us_ssn`, an operator format's name), the secret type (`aws_access_key_id`), the injection signal,
   * the regex pattern's index (`pattern_0`). Absent for email, phone, keyword.
   */
  subtype?: string;
  /** For `prompt_injection`: the text's combined heuristic score in [0, 1]. */
  score?: number;
}

/** One match of a compiled rule: the detection, the rule's name and the rule's action. */
export interface Finding extends Detection {
  rule: string;
  action: GuardrailAction;
}

/**
 * A detector: a pure function from a string to its matches, sorted by start (a detector with several formats may
 * report overlapping matches; the scanner resolves overlaps).
 * `from` is where matches may begin (default 0): the text before it is context only, so that a boundary check
 * (`not preceded by a letter`) sees the real preceding character. The stream guard relies on this to rescan only
 * its held-back text while keeping a little already-released text as context.
 */
export type Detect = (text: string, from?: number) => Detection[];
