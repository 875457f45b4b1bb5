/** The value every label value past the cap is folded into. */
export const OTHER = 'other';

/**
 * Keeps one label's values bounded: the first `max` distinct values are kept as they are, every later one
 * becomes `other`. A model name a client invents then costs at most one series more, however many it invents.
 */
export class LabelValues {
  private readonly seen = new Set<string>();

  constructor(private readonly max: number) {}

  of(value: string): string {
    if (this.seen.has(value)) return value;
    if (this.seen.size >= this.max) return OTHER;
    this.seen.add(value);
    return value;
  }
}
