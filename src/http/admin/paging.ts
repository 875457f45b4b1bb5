import { gatewayError } from '../../core/errors.js';

const DEFAULT_LIMIT = 50;

/** `?limit=` for a newest-first list: a positive integer, clamped to what the store serves in one page. */
export function parsePageLimit(raw: string | undefined, max: number): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const limit = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(limit) || limit < 1) throw gatewayError('invalid_query', `limit must be a positive integer, got '${raw}'.`, { param: 'limit' });
  return Math.min(limit, max);
}

/** A page in the API's list shape; `next_before` is the cursor for the next (older) page, null on the last one. */
export function listPage<T extends { id: string }>(data: T[], limit: number): { object: 'list'; data: T[]; next_before: string | null } {
  return { object: 'list', data, next_before: data.length === limit ? (data[data.length - 1]?.id ?? null) : null };
}
