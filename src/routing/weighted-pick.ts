/** Picks one item with probability proportional to its weight. `random` is injectable for tests. */
export function weightedPick<T extends { weight: number }>(items: readonly T[], random: () => number = Math.random): T | undefined {
  if (items.length <= 1) return items[0];
  let total = 0;
  for (const item of items) total += item.weight;
  let point = random() * total;
  for (const item of items) {
    point -= item.weight;
    if (point < 0) return item;
  }
  return items[items.length - 1];
}
