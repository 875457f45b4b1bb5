import { gatewayError } from '../../core/errors.js';

const DEFAULT_LIMIT = 50;

/** `?limit=` for a newest-first list: a positive integer, clamped to what the store serves in one page. */
export function parsePageLimit(raw: string | undefined, max: number): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const limit = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(limit) || limit < 1) throw gatewayError('invalid_query', `limit must be a positive integer, got '${raw}'.`, { param: 'limit' });
  return Math.min(limit, max);
}
