import type { FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import type { WrittenAfterQuery } from '../../governance/request-log-writes.js';
import { parseLogFilter } from './log-filters.js';
import { parsePageLimit } from './paging.js';
import { queryString } from './request-body.js';

/** What only a written_after query takes. */
export const SHIPPING_PARAMS = ['written_after', 'allow_gaps'] as const;

/** Parameters that select by arrival, which write order does not mix with (a shipper would miss what ended late). */
const ARRIVAL_PARAMS = ['from', 'to', 'tz', 'before'] as const;

/** Entries one export call with written_after answers at most: read in one go, so the page and its cursor agree. */
export const MAX_SHIPPING_EXPORT = 1_000;

/**
 * The written_after query of `GET /api/logs` and its export, or undefined when the request has none (then
 * allow_gaps is refused). `limit` defaults to `defaultLimit` and is clamped to `maxLimit`.
 */
export function parseWrittenAfter(request: FastifyRequest, defaultLimit: number, maxLimit: number): WrittenAfterQuery | undefined {
  const raw = queryString(request, 'written_after');
  const allowGaps = queryString(request, 'allow_gaps');
  if (raw === undefined) {
    if (allowGaps !== undefined) throw gatewayError('invalid_query', 'allow_gaps goes with written_after.', { param: 'allow_gaps' });
    return undefined;
  }
  if (!/^\d{1,16}$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw gatewayError('invalid_query', `written_after must be a write_seq (0 for the start of the log), got '${raw.slice(0, 40)}'.`, { param: 'written_after' });
  if (allowGaps !== undefined && allowGaps !== 'true' && allowGaps !== 'false') {
    throw gatewayError('invalid_query', `allow_gaps must be true or false, got '${allowGaps.slice(0, 20)}'.`, { param: 'allow_gaps' });
  }
  for (const name of ARRIVAL_PARAMS) {
    if (queryString(request, name) !== undefined) {
      throw gatewayError('invalid_query', `${name} selects by when requests arrived and written_after by when their records were written: use one or the other.`, { param: name });
    }
  }
  const { from: _from, to: _to, ...filter } = parseLogFilter(request);
  const limit = queryString(request, 'limit');
  return { ...filter, after: Number(raw), limit: limit === undefined ? defaultLimit : parsePageLimit(limit, maxLimit), allowGaps: allowGaps === 'true' };
}
