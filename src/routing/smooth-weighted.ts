/**
 * Smooth weighted round-robin (nginx's): each pick adds every eligible item's weight to its running score,
 * takes the highest, and charges it the sum. Over any run of picks, each item's share matches its weight
 * within one pick, and picks of one item are spread out rather than bunched, which random choice cannot
 * promise (1,000 random picks at 3:1 miss 75/25 by 3 points about one time in thirty). Weights may change
 * between picks; the scores carry on.
 */
export class SmoothWeighted {
  private readonly scores = new Map<string, number>();

  pick<T>(items: readonly T[], weightOf: (item: T) => number, idOf: (item: T) => string): T | undefined {
    if (items.length <= 1) return items[0];
    let total = 0;
    let best: T | undefined;
    let bestScore = -Infinity;
    let bestId = '';
    for (const item of items) {
      const weight = Math.max(0, weightOf(item));
      const id = idOf(item);
      const score = (this.scores.get(id) ?? 0) + weight;
      this.scores.set(id, score);
      total += weight;
      if (score > bestScore) {
        best = item;
        bestScore = score;
        bestId = id;
      }
    }
    this.scores.set(bestId, bestScore - total);
    // Ids that left the config would otherwise stay forever.
    if (this.scores.size > items.length * 4 + 16) {
      const live = new Set(items.map(idOf));
      for (const id of this.scores.keys()) if (!live.has(id)) this.scores.delete(id);
    }
    return best;
  }
}
