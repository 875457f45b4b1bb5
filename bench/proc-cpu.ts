import { readFileSync } from 'node:fs';

/** Linux reports /proc/<pid>/stat times in clock ticks of 1/100 s (USER_HZ). */
const MICROS_PER_TICK = 10_000;

/**
 * User + system CPU a process has used so far, in µs, from /proc (10 ms resolution: read it over slices of a
 * second or more). For servers that do not speak the bench's control channel (the Portkey gateway).
 */
export function processCpuMicros(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name is in parentheses and may hold spaces: count fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * MICROS_PER_TICK;
}
