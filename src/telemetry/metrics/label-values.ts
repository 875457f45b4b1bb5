import { redactSecrets } from '../../core/redact-secrets.js';

/** The value every label value past the cap is folded into. */
export const OTHER = 'other';

/**
 * Where a value's slot comes from: a named pool of `max` slots (values of one kind compete only with each other), or
 * null for a value that needs none (one the operator named: bounded by the config).
 */
export type Pool = string | null;

/**
 * Keeps one label's values bounded: the first `max` distinct values of a pool are kept as they are, every later one
 * becomes `other`. A model name a client invents then costs at most one series more, however many it invents. With
 * `poolOf`, values of different kinds fill separate pools (the models the catalogue knows, and names nobody knows),
 * and values it gives no pool are always kept: names clients made up first then never take a known model's place.
 */
export class LabelValues {
  /** Each value seen: its label (itself, or with a secret a client pasted into it redacted, looked at once) and pool. */
  private readonly seen = new Map<string, { label: string; pool: Pool }>();
  /** Slots taken, by pool. */
  private readonly used = new Map<string, number>();

  constructor(
    private readonly max: number,
    /** The pool of a value (of this context, e.g. a model of this provider); asked once per value kept. */
    private readonly poolOf: (value: string, context: string) => Pool = () => '',
  ) {}

  of(value: string, context = ''): string {
    const seen = this.seen.get(value);
    if (seen !== undefined) return seen.label;
    const pool = this.poolOf(value, context);
    if (pool !== null) {
      const used = this.used.get(pool) ?? 0;
      if (used >= this.max) return OTHER;
      this.used.set(pool, used + 1);
    }
    const label = redactSecrets(value);
    this.seen.set(value, { label, pool });
    return label;
  }

  /**
   * Forgets the values not in `live` (keys deleted since), so their slots go to values that exist: without it a
   * gateway whose keys come and go would fold its few live keys into `other` once the cap's worth had been seen.
   */
  retain(live: ReadonlySet<string>): void {
    for (const [value, { pool }] of this.seen) {
      if (live.has(value)) continue;
      this.seen.delete(value);
      if (pool !== null) this.used.set(pool, (this.used.get(pool) ?? 1) - 1);
    }
  }
}
