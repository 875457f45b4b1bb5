/** Edit distance (insertions, deletions, substitutions, and a swap of two neighbours counted as one), case-insensitive. */
function distance(a: string, b: string): number {
  const x = a.toLowerCase();
  const y = b.toLowerCase();
  const rows: number[][] = Array.from({ length: x.length + 1 }, (_, i) => [i, ...Array<number>(y.length).fill(0)]);
  for (let j = 1; j <= y.length; j++) (rows[0] as number[])[j] = j;
  for (let i = 1; i <= x.length; i++) {
    const row = rows[i] as number[];
    const above = rows[i - 1] as number[];
    for (let j = 1; j <= y.length; j++) {
      const cost = x[i - 1] === y[j - 1] ? 0 : 1;
      let best = Math.min((above[j] as number) + 1, (row[j - 1] as number) + 1, (above[j - 1] as number) + cost);
      if (i > 1 && j > 1 && x[i - 1] === y[j - 2] && x[i - 2] === y[j - 1]) best = Math.min(best, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = best;
    }
  }
  return (rows[x.length] as number[])[y.length] as number;
}

/**
 * The known name a mistyped one most likely meant (`tragets` -> `targets`, `opnai` -> `openai`), or null when none
 * is close: at most one edit for a short name, two from six characters, three from twelve. Inputs longer than 100
 * characters are not compared (a name of that size is not a typo, and the comparison is quadratic).
 */
export function didYouMean(input: string, known: Iterable<string>): string | null {
  if (input.length === 0 || input.length > 100) return null;
  const allowed = input.length >= 12 ? 3 : input.length >= 6 ? 2 : 1;
  let best: string | null = null;
  let bestDistance = allowed + 1;
  for (const candidate of known) {
    if (candidate === input || Math.abs(candidate.length - input.length) > allowed) continue;
    const d = distance(input, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** ` (did you mean "x"?)`, or nothing when no known name is close. */
export function didYouMeanHint(input: string, known: Iterable<string>): string {
  const match = didYouMean(input, known);
  return match === null ? '' : ` (did you mean "${match}"?)`;
}
