import type { FastifyInstance } from 'fastify';
import { MAX_LOG_LIMIT } from '../../governance/governance-store.js';
import type { AdminDeps } from './admin-deps.js';
import { listPage, parsePageLimit } from './paging.js';
import { queryString } from './request-body.js';

/** The request log, newest first, optionally one key's. */
export function registerLogRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/logs', async (request) => {
    const limit = parsePageLimit(queryString(request, 'limit'), MAX_LOG_LIMIT);
    const before = queryString(request, 'before') || undefined;
    const keyId = queryString(request, 'key_id') || undefined;
    return listPage(deps.governance.requestLog({ limit, ...(before ? { before } : {}), ...(keyId ? { key_id: keyId } : {}) }), limit);
  });
}
