import { usd } from '../format.js';

/** Spend against a budget as a bar with the numbers beside it; no budget reads "no budget". */
export function BudgetBar({ spend, budget, period }: { spend: number; budget: number | null; period?: string }) {
  if (budget === null || budget === undefined) return <span class="muted">{usd(spend)} · no budget</span>;
  const used = budget > 0 ? Math.min(1, spend / budget) : 1;
  const level = used >= 1 ? 'over' : used >= 0.8 ? 'high' : 'ok';
  const label = `${usd(spend)} of ${usd(budget)}${period && period !== 'total' ? ` ${period}` : ''}`;
  return (
    <div class="budget">
      <meter class={`budget-meter budget-${level}`} min={0} max={1} value={used} aria-label={`Spend: ${label}`} />
      <span class="budget-label">{label}</span>
    </div>
  );
}
