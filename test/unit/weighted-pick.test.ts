import { describe, expect, it } from 'vitest';
import { weightedPick } from '../../src/routing/weighted-pick.js';

describe('weightedPick', () => {
  it('returns undefined for an empty list', () => {
    expect(weightedPick([], () => 0.5)).toBeUndefined();
  });

  it('returns the only item without consulting random', () => {
    const only = { weight: 3, id: 'a' };
    expect(weightedPick([only], () => {
      throw new Error('random must not be called');
    })).toBe(only);
  });

  it('follows the weights with an injected deterministic random', () => {
    const items = [
      { id: 'a', weight: 1 },
      { id: 'b', weight: 3 },
      { id: 'c', weight: 6 },
    ];
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    const steps = 1000;
    for (let i = 0; i < steps; i++) {
      const r = (i + 0.5) / steps;
      const picked = weightedPick(items, () => r);
      counts[picked!.id]!++;
    }
    expect(counts).toEqual({ a: 100, b: 300, c: 600 });
  });

  it('maps the edges of random() to the first and last items', () => {
    const items = [
      { id: 'a', weight: 2 },
      { id: 'b', weight: 2 },
    ];
    expect(weightedPick(items, () => 0)?.id).toBe('a');
    expect(weightedPick(items, () => 0.4999)?.id).toBe('a');
    expect(weightedPick(items, () => 0.5)?.id).toBe('b');
    expect(weightedPick(items, () => 0.999999)?.id).toBe('b');
  });

  it('never picks a zero-weight item', () => {
    const items = [
      { id: 'zero', weight: 0 },
      { id: 'one', weight: 1 },
    ];
    for (const r of [0, 0.3, 0.9999]) expect(weightedPick(items, () => r)?.id).toBe('one');
  });
});
