/** The shares of a budget whose crossing is announced (`budget.threshold`), in percent. */
export const BUDGET_THRESHOLDS = [50, 80, 100] as const;

export type BudgetThreshold = (typeof BUDGET_THRESHOLDS)[number];

/**
 * The thresholds a spend is past now and was not before: `before` and `after` are each a spend and the budget it
 * is measured against (a budget of null: there was none, so no line was past). A charge moves the spend; an
 * operator lowering (or first setting) a budget moves the lines.
 */
export function thresholdsCrossed(before: { spend: number; budget: number | null }, after: { spend: number; budget: number }): BudgetThreshold[] {
  return BUDGET_THRESHOLDS.filter((threshold) => {
    const wasPast = before.budget !== null && before.spend >= (before.budget * threshold) / 100;
    return !wasPast && after.spend >= (after.budget * threshold) / 100;
  });
}
