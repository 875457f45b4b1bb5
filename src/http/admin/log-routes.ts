import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors.js';
import { MAX_LOG_LIMIT } from '../../governance/governance-store.js';
import type { AdminDeps } from './admin-deps.js';
import { queryString } from './request-body.js';

const DEFAULT_LIMIT = 50;

function parseLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_LIMIT;
  const limit = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(limit) || limit < 1) throw GatewayError.badRequest(`limit must be a positive integer, got '${raw}'.`, 'limit', 'invalid_query');
  return Math.min(limit, MAX_LOG_LIMIT);
}

/** The request log, newest first, optionally one key's. `next_before` is the cursor for the next (older) page, null on the last one. */
export function registerLogRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/logs', async (request) => {
    const limit = parseLimit(queryString(request, 'limit'));
    const before = queryString(request, 'before') || undefined;
    const keyId = queryString(request, 'key_id') || undefined;
    const data = deps.governance.requestLog({ limit, ...(before ? { before } : {}), ...(keyId ? { key_id: keyId } : {}) });
    return { object: 'list', data, next_before: data.length === limit ? (data[data.length - 1]?.id ?? null) : null };
  });
}
