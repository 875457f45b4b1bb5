/** Formats a duration the way OpenAI's `x-ratelimit-reset-*` headers do: `20ms`, `1.5s`, `6m0s`. */
export function formatResetDuration(ms: number): string {
  const clamped = Math.max(0, Math.ceil(ms));
  if (clamped < 1000) return `${clamped}ms`;
  if (clamped < 60_000) return `${Number((clamped / 1000).toFixed(3))}s`;
  const minutes = Math.floor(clamped / 60_000);
  return `${minutes}m${Number(((clamped % 60_000) / 1000).toFixed(3))}s`;
}
