import { afterEach, describe, expect, it, vi } from 'vitest';
import { InFlight } from '../../src/cache/in-flight.js';

/** The registry behind request coalescing: bounded waits, one answer per waiter, nothing left once a leader ends. */
describe('InFlight', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('tells every waiter the answer once, and forgets the flight when its leader ends', () => {
    const flights = new InFlight<string>(1_000);
    const finish = flights.lead('k');
    expect(finish).not.toBeNull();
    expect(flights.lead('k')).toBeNull();
    const told: Array<string | null> = [];
    flights.wait('k', (answer) => told.push(answer));
    flights.wait('k', (answer) => told.push(answer));
    expect(flights.waiting).toBe(2);
    finish?.('answer');
    finish?.(null);
    expect(told).toEqual(['answer', 'answer']);
    expect(flights.size).toBe(0);
    expect(flights.waiting).toBe(0);
    expect(flights.wait('k', () => undefined)).toBeNull();
  });

  it('lets a waiter go to the provider after the bound, and never tells it again', () => {
    vi.useFakeTimers();
    const flights = new InFlight<string>(50);
    const finish = flights.lead('k');
    const told: Array<string | null> = [];
    flights.wait('k', (answer) => told.push(answer));
    vi.advanceTimersByTime(49);
    expect(told).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(told).toEqual([null]);
    expect(flights.waiting).toBe(0);
    finish?.('late');
    expect(told).toEqual([null]);
    expect(flights.size).toBe(0);
  });

  it('keeps keys apart, and drops a waiter that leaves without telling it', () => {
    const flights = new InFlight<string>(1_000);
    const finishA = flights.lead('a');
    const finishB = flights.lead('b');
    const told: Array<string | null> = [];
    const leave = flights.wait('a', (answer) => told.push(`a:${answer}`));
    flights.wait('b', (answer) => told.push(`b:${answer}`));
    leave?.();
    expect(flights.waiting).toBe(1);
    finishA?.('one');
    finishB?.(null);
    expect(told).toEqual(['b:null']);
    expect(flights.size).toBe(0);
  });

  it('lets a waiter told of a failure lead the next flight of its key', () => {
    const flights = new InFlight<string>(1_000);
    const finish = flights.lead('k');
    let next: ((answer: string | null) => void) | null = null;
    flights.wait('k', () => {
      next = flights.lead('k');
    });
    finish?.(null);
    expect(next).not.toBeNull();
    expect(flights.size).toBe(1);
    (next as unknown as (answer: string | null) => void)(null);
    expect(flights.size).toBe(0);
  });
});
