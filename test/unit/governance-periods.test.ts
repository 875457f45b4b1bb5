import { describe, expect, it } from 'vitest';
import { periodBounds, periodEnded, periodHolding, periodStartingNow, roundUsd } from '../../src/governance/periods.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

describe('periodBounds (UTC)', () => {
  it('daily runs from 00:00Z to the next 00:00Z', () => {
    const { start, end } = periodBounds('daily', new Date('2025-03-09T23:59:59.999Z'));
    expect(iso(start)).toBe('2025-03-09T00:00:00.000Z');
    expect(iso(end)).toBe('2025-03-10T00:00:00.000Z');
  });

  it('a boundary instant belongs to the period it opens', () => {
    const { start, end } = periodBounds('daily', new Date('2025-03-10T00:00:00.000Z'));
    expect(iso(start)).toBe('2025-03-10T00:00:00.000Z');
    expect(iso(end)).toBe('2025-03-11T00:00:00.000Z');
  });

  it('weekly runs from Monday 00:00Z to the next Monday', () => {
    // 2025-03-09 is a Sunday, 2025-03-10 a Monday.
    expect(periodBounds('weekly', new Date('2025-03-09T18:00:00Z'))).toEqual({ start: Date.parse('2025-03-03T00:00:00Z'), end: Date.parse('2025-03-10T00:00:00Z') });
    expect(periodBounds('weekly', new Date('2025-03-10T00:00:00Z'))).toEqual({ start: Date.parse('2025-03-10T00:00:00Z'), end: Date.parse('2025-03-17T00:00:00Z') });
    expect(periodBounds('weekly', new Date('2025-03-12T09:30:00Z'))).toEqual({ start: Date.parse('2025-03-10T00:00:00Z'), end: Date.parse('2025-03-17T00:00:00Z') });
    // Across a year end: Wednesday 2025-12-31 -> Monday 2025-12-29 .. Monday 2026-01-05.
    expect(periodBounds('weekly', new Date('2025-12-31T10:00:00Z'))).toEqual({ start: Date.parse('2025-12-29T00:00:00Z'), end: Date.parse('2026-01-05T00:00:00Z') });
  });

  it('monthly runs from the 1st 00:00Z to the 1st of next month, across year ends and leap days', () => {
    expect(periodBounds('monthly', new Date('2025-12-31T23:00:00Z'))).toEqual({ start: Date.parse('2025-12-01T00:00:00Z'), end: Date.parse('2026-01-01T00:00:00Z') });
    expect(periodBounds('monthly', new Date('2024-02-29T12:00:00Z'))).toEqual({ start: Date.parse('2024-02-01T00:00:00Z'), end: Date.parse('2024-03-01T00:00:00Z') });
  });

  it('total never ends', () => {
    expect(periodBounds('total', new Date('2025-01-01T00:00:00Z')).end).toBeNull();
  });
});

describe('period helpers', () => {
  it('a period starting now runs from now to the next boundary, with zeroed counters', () => {
    const now = new Date('2025-03-12T09:30:00Z');
    expect(periodStartingNow('monthly', now)).toEqual({ spend: 0, requests: 0, period_start: '2025-03-12T09:30:00.000Z', period_resets_at: '2025-04-01T00:00:00.000Z' });
    expect(periodStartingNow('total', now)).toEqual({ spend: 0, requests: 0, period_start: '2025-03-12T09:30:00.000Z', period_resets_at: null });
  });

  it('a rolled-over period starts at the calendar boundary', () => {
    expect(periodHolding('daily', new Date('2025-03-12T09:30:00Z'))).toEqual({
      spend: 0,
      requests: 0,
      period_start: '2025-03-12T00:00:00.000Z',
      period_resets_at: '2025-03-13T00:00:00.000Z',
    });
  });

  it('periodEnded is true from the reset instant on, never for total', () => {
    expect(periodEnded('2025-03-13T00:00:00.000Z', new Date('2025-03-12T23:59:59.999Z'))).toBe(false);
    expect(periodEnded('2025-03-13T00:00:00.000Z', new Date('2025-03-13T00:00:00.000Z'))).toBe(true);
    expect(periodEnded(null, new Date('2999-01-01T00:00:00Z'))).toBe(false);
  });

  it('roundUsd keeps sums free of float drift', () => {
    let sum = 0;
    for (let i = 0; i < 1000; i++) sum = roundUsd(sum + 0.1);
    expect(sum).toBe(100);
    expect(roundUsd(0.1 + 0.2)).toBe(0.3);
  });
});
