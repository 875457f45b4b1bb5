import { readFileSync } from 'node:fs';

/** Linux reports /proc/stat in clock ticks of 1/100 s (USER_HZ) on every architecture Node runs on. */
const MICROS_PER_TICK = 10_000;

/**
 * Busy CPU time of the whole machine so far (all cores, everything but idle and iowait), in µs, or NaN
 * where /proc/stat is missing. The bench subtracts its own processes' CPU from this to show how much other
 * work (test runs, builds) competed with it for the cores, since that noise is easy to mistake for overhead.
 */
export function systemBusyMicros(): number {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? '';
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal [guest guest_nice, already counted in user/nice]
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = ticks;
    return (user + nice + system + irq + softirq + steal) * MICROS_PER_TICK;
  } catch {
    return Number.NaN;
  }
}
