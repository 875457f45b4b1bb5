/**
 * Wall-clock time in an IANA time zone, with nothing but Intl: a zone's offset at an instant, the instant a local
 * date starts (DST-correct: a local day can be 23 or 25 hours, and in a few zones midnight itself is skipped), and
 * an instant written as an ISO time with that zone's offset.
 */

const MINUTE = 60_000;
const DAY = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric', era: 'short' });
    formatters.set(zone, format);
  }
  return format;
}

/** The zone's canonical name (`europe/berlin` -> `Europe/Berlin`), or undefined when Intl does not know it. */
export function canonicalTimeZone(name: string): string | undefined {
  if (name.length === 0 || name.length > 64) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** The zone's offset from UTC at an instant, in ms (Europe/Berlin in winter: 3,600,000). */
export function offsetAt(at: number, zone: string): number {
  const second = Math.floor(at / 1000) * 1000;
  const parts: Record<string, string> = {};
  for (const part of formatter(zone).formatToParts(second)) parts[part.type] = part.value;
  const year = parts.era === 'BC' || parts.era === 'B' ? 1 - Number(parts.year) : Number(parts.year);
  const wall = Date.UTC(year, Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  return wall - second;
}

/** The local wall-clock time of an instant, as ms on a UTC calendar (read it with getUTC*). */
export function wallTime(at: number, zone: string): number {
  return at + offsetAt(at, zone);
}

/**
 * The instant a wall-clock time (ms on a UTC calendar) names in the zone: the earlier one when clocks went back and
 * it happened twice, undefined when clocks went forward past it and it never happened.
 */
export function instantOf(wall: number, zone: string): number | undefined {
  const candidates = new Set([wall - offsetAt(wall - DAY, zone), wall - offsetAt(wall, zone), wall - offsetAt(wall + DAY, zone)]);
  let found: number | undefined;
  for (const at of candidates) if (wallTime(at, zone) === wall && (found === undefined || at < found)) found = at;
  return found;
}

/** The first instant whose local time is at or after a wall-clock time: the instant itself, or the end of a skipped stretch. */
function firstAtOrAfter(wall: number, zone: string): number {
  const exact = instantOf(wall, zone);
  if (exact !== undefined) return exact;
  // Skipped: the change lies between the wall time read with the later offset and with the earlier one.
  let low = wall - Math.max(offsetAt(wall - DAY, zone), offsetAt(wall + DAY, zone));
  let high = wall - Math.min(offsetAt(wall - DAY, zone), offsetAt(wall + DAY, zone));
  while (high - low > 1000) {
    const middle = Math.floor((low + high) / 2000) * 1000;
    if (wallTime(middle, zone) >= wall) high = middle;
    else low = middle;
  }
  return high;
}

/** The instant a local date (month 1-12) starts in the zone: its midnight, or when its day began if midnight was skipped. */
export function startOfDate(year: number, month: number, day: number, zone: string): number {
  return firstAtOrAfter(Date.UTC(year, month - 1, day), zone);
}

/** The start of the local day an instant falls on. */
export function startOfLocalDay(at: number, zone: string): number {
  const wall = new Date(wallTime(at, zone));
  const start = startOfDate(wall.getUTCFullYear(), wall.getUTCMonth() + 1, wall.getUTCDate(), zone);
  // Clocks that went back over midnight can put an instant's own day start after it; the day it is in began earlier.
  return start <= at ? start : startOfLocalDay(at - DAY / 2, zone);
}

/** The start of the local day after the one that starts at `dayStart`. */
export function startOfNextLocalDay(dayStart: number, zone: string): number {
  const wall = new Date(wallTime(dayStart, zone));
  return startOfDate(wall.getUTCFullYear(), wall.getUTCMonth() + 1, wall.getUTCDate() + 1, zone);
}

/** An instant as ISO 8601 local time with the zone's offset: `2026-11-29T00:00:00.000+01:00`. */
export function isoInZone(at: number, zone: string): string {
  const offset = offsetAt(at, zone);
  const local = new Date(at + offset).toISOString().slice(0, -1);
  const minutes = Math.round(Math.abs(offset) / MINUTE);
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${local}${offset < 0 ? '-' : '+'}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
}
