import type { FastifyInstance } from 'fastify';
import type { AdminDeps } from './admin-deps.js';
import { listPage, parsePageLimit } from './paging.js';
import { queryString } from './request-body.js';

/** The service caps a page at this; clamping here too keeps `next_before` honest for larger requests. */
const MAX_LIMIT = 500;

/** The audit log, newest first. */
export function registerAuditRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/audit', async (request) => {
    const limit = parsePageLimit(queryString(request, 'limit'), MAX_LIMIT);
    const before = queryString(request, 'before') || undefined;
    return listPage(deps.configService.audit({ limit, ...(before ? { before } : {}) }), limit);
  });
}
