import { redactSecrets } from '../../core/redact-secrets.js';

/** The value every label value past the cap is folded into. */
export const OTHER = 'other';

/**
 * Keeps one label's values bounded: the first `max` distinct values are kept as they are, every later one
 * becomes `other`. A model name a client invents then costs at most one series more, however many it invents.
 */
export class LabelValues {
  /** Each value seen, and its label: itself, or with a secret a client pasted into it redacted (looked at once). */
  private readonly seen = new Map<string, string>();

  constructor(private readonly max: number) {}

  of(value: string): string {
    const label = this.seen.get(value);
    if (label !== undefined) return label;
    if (this.seen.size >= this.max) return OTHER;
    const redacted = redactSecrets(value);
    this.seen.set(value, redacted);
    return redacted;
  }

  /**
   * Forgets the values not in `live` (keys deleted since), so their slots go to values that exist: without it a
   * gateway whose keys come and go would fold its few live keys into `other` once the cap's worth had been seen.
   */
  retain(live: ReadonlySet<string>): void {
    for (const value of this.seen.keys()) if (!live.has(value)) this.seen.delete(value);
  }
}
