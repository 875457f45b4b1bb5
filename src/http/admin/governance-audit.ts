/** What a key or team record says about who may do what: its counters (spend, requests, periods) left out. */
const COUNTERS = new Set(['spend', 'requests', 'total_spend', 'total_requests', 'period_start', 'period_resets_at', 'updated_at', 'last_used_at']);

/**
 * A virtual key's or team's view as the audit log keeps it: its settings (name, budget, limits, models, team,
 * plugins, disabled, expiry, the key's prefix), never the secret or its hash (views hold neither), and not the
 * counters every request changes.
 */
export function settingsOf(view: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(view)) if (!COUNTERS.has(field) && field !== 'key' && field !== 'key_hash') out[field] = value;
  return out;
}
