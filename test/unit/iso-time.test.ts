import { describe, expect, it } from 'vitest';
import { isoTime } from '../../src/core/iso-time.js';

describe('isoTime', () => {
  it('gives what toISOString gives, across minutes, hours, days and years, forwards and back', () => {
    const times: number[] = [0, 59_999, 60_000, Date.UTC(2026, 10, 29, 23, 59, 59, 999), Date.UTC(2026, 11, 31, 23, 59, 59, 999), Date.UTC(2027, 0, 1), Date.UTC(9999, 11, 31, 23, 59, 59, 999)];
    for (let ms = Date.UTC(2026, 10, 29, 13, 59, 58); ms < Date.UTC(2026, 10, 29, 14, 0, 2); ms += 7) times.push(ms);
    for (let ms = 1; ms < 253_402_300_799_999; ms = ms * 1.37 + 11) times.push(Math.floor(ms));
    // The clock may go back (and come again): the minute kept is replaced each time it changes.
    for (const ms of [...times, ...times.reverse()]) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
  });
});
