/** How numbers, money and times read on every page. */

export function usd(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (value === 0) return '$0';
  const sign = value < 0 ? '-' : '';
  const amount = Math.abs(value);
  // Per-request costs are often fractions of a cent: keep two significant digits to tell them apart, written out
  // in full (toPrecision wrote a cheap model's $0.00000008 as "$8.0e-8").
  if (amount < 0.01) return `${sign}$${amount.toLocaleString('en-US', { maximumSignificantDigits: 2, maximumFractionDigits: 20 })}`;
  return `${sign}$${amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

export function count(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return value.toLocaleString('en-US');
}

export function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return value >= 1000 ? `${(value / 1000).toFixed(2)} s` : `${Math.round(value * 10) / 10} ms`;
}

export function percent(value: number): string {
  return `${Math.round(value * 1000) / 10}%`;
}

export function dateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** The browser's IANA time zone (`Europe/Berlin`): the API counts usage days and reads dates in it when sent as `tz`. */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** The value an `<input type="datetime-local">` shows for a moment, in the browser's time zone, to the second. */
export function dateTimeInput(date: Date): string {
  return `${dateInput(date)}T${pad2(date.getHours())}:${pad2(date.getMinutes())}:${pad2(date.getSeconds())}`;
}

/** A moment as ISO 8601 local time with the browser's offset (`2026-11-29T10:00:00+05:30`): what the API reads unambiguously. */
export function isoWithOffset(date: Date): string {
  const offset = -date.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  return `${dateTimeInput(date)}${sign}${pad2(Math.floor(Math.abs(offset) / 60))}:${pad2(Math.abs(offset) % 60)}`;
}

/** The value an `<input type="date">` shows for a moment, in the browser's time zone. */
export function dateInput(date: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
}

/** The value at `fraction` (0.5, 0.95) of the sorted values, nearest rank; null for none. */
export function percentile(values: number[], fraction: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? null;
}

/** How long ago a moment was, in words ("12 s ago", "5 min ago", "3 h ago", "2 d ago"); the future reads "now". */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '—';
  const then = new Date(iso).getTime();
  if (Number.isNaN(then)) return iso;
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}
