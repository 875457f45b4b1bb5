import { describe, expect, it } from 'vitest';
import { Reservations } from '../../src/governance/reservations.js';

describe('Reservations', () => {
  it('holds the sum of the reservations on every account, and nothing once all are released, in any order', () => {
    const reservations = new Reservations();
    const amounts = [0.1, 0.2, 0.30000000000000004, 7, 1e-12, 0];
    const releases = amounts.map((amount) => reservations.reserve(['key:a', 'team:t'], amount));
    expect(reservations.reserved('key:a')).toBeCloseTo(7.6, 9);
    expect(reservations.reserved('team:t')).toBeCloseTo(7.6, 9);
    // Release the largest first, then the rest: no residue of float sums is left held, not even 1e-12.
    for (const index of [3, 0, 5, 2, 1]) releases[index]?.();
    expect(reservations.reserved('key:a')).toBeCloseTo(1e-12, 15);
    releases[4]?.();
    expect(reservations.reserved('key:a')).toBe(0);
    expect(reservations.snapshot()).toEqual({});
  });

  it('refuses a negative, NaN or infinite amount, which would let requests past a budget or lock it for ever', () => {
    const reservations = new Reservations();
    for (const amount of [-10, -1e-9, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
      expect(() => reservations.reserve(['key:a'], amount)).toThrow(RangeError);
    }
    expect(reservations.snapshot()).toEqual({});
  });

  it('releases once however often release is called', () => {
    const reservations = new Reservations();
    const first = reservations.reserve(['key:a'], 5);
    const second = reservations.reserve(['key:a'], 3);
    first();
    first();
    first();
    expect(reservations.reserved('key:a')).toBe(3);
    second();
    expect(reservations.snapshot()).toEqual({});
  });

  it('keeps accounts apart', () => {
    const reservations = new Reservations();
    const keyOnly = reservations.reserve(['key:a'], 2);
    const both = reservations.reserve(['key:b', 'team:t'], 4);
    expect(reservations.snapshot()).toEqual({ 'key:a': 2, 'key:b': 4, 'team:t': 4 });
    both();
    expect(reservations.snapshot()).toEqual({ 'key:a': 2 });
    keyOnly();
    expect(reservations.snapshot()).toEqual({});
  });
});
