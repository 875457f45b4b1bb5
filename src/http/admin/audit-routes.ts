import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors.js';
import type { AdminDeps } from './admin-deps.js';
import { queryString } from './request-body.js';

const DEFAULT_LIMIT = 50;
/** The service caps a page at this; clamping here too keeps `next_before` honest for larger requests. */
const MAX_LIMIT = 500;

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const limit = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(limit) || limit < 1) throw GatewayError.badRequest(`limit must be a positive integer, got '${raw}'.`, 'limit', 'invalid_query');
  return Math.min(limit, MAX_LIMIT);
}

/** The audit log, newest first. `next_before` is the cursor for the next (older) page, null on the last one. */
export function registerAuditRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/audit', async (request) => {
    const limit = parseLimit(queryString(request, 'limit'));
    const before = queryString(request, 'before') || undefined;
    const data = deps.configService.audit({ limit, ...(before ? { before } : {}) });
    return { object: 'list', data, next_before: data.length === limit ? (data[data.length - 1]?.id ?? null) : null };
  });
}
