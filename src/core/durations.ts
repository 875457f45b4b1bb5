/** Formats a duration the way OpenAI's `x-ratelimit-reset-*` headers do: `20ms`, `1.5s`, `6m0s`. */
export function formatResetDuration(ms: number): string {
  const clamped = Math.max(0, Math.ceil(ms));
  if (clamped < 1000) return `${clamped}ms`;
  // Whole milliseconds over 1000 print in at most three decimals as they are (`1.5`, `1.001`): what
  // Number(x.toFixed(3)) gave, without a string round trip on every keyed request.
  if (clamped < 60_000) return `${clamped / 1000}s`;
  const minutes = Math.floor(clamped / 60_000);
  return `${minutes}m${(clamped % 60_000) / 1000}s`;
}

/** Milliseconds of an OpenAI reset duration (Go's format: `20ms`, `1.5s`, `6m0s`, `1h2m3s`), or null. */
export function parseResetDuration(text: string): number | null {
  const parts = /^(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m(?!s))?(?:(\d+(?:\.\d+)?)s)?(?:(\d+(?:\.\d+)?)ms)?$/.exec(text);
  if (parts === null || text === '') return null;
  const [, hours, minutes, seconds, millis] = parts;
  return Number(hours ?? 0) * 3_600_000 + Number(minutes ?? 0) * 60_000 + Number(seconds ?? 0) * 1000 + Number(millis ?? 0);
}
