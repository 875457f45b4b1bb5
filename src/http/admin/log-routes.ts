import type { FastifyInstance } from 'fastify';
import { quoteInput } from '../../core/quote-input.js';
import { MAX_LOG_LIMIT } from '../../governance/governance-store.js';
import type { AdminDeps } from './admin-deps.js';
import { listPage, parsePageLimit } from './paging.js';
import { queryString } from './request-body.js';
import { gatewayError } from '../../core/errors.js';

/** The request log, newest first, optionally one key's. */
export function registerLogRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/logs', async (request) => {
    const limit = parsePageLimit(queryString(request, 'limit'), MAX_LOG_LIMIT);
    const before = queryString(request, 'before') || undefined;
    const keyId = queryString(request, 'key_id') || undefined;
    return listPage(deps.governance.requestLog({ limit, ...(before ? { before } : {}), ...(keyId ? { key_id: keyId } : {}) }), limit);
  });

  // The id is the `x-request-id` the client got with its answer.
  api.get<{ Params: { id: string } }>('/logs/:id', async (request) => {
    const entry = deps.governance.requestLogEntry(request.params.id);
    if (!entry) throw gatewayError('request_not_found', `No request with id '${quoteInput(request.params.id, 100)}' in the request log (it may be older than the log keeps).`);
    return entry;
  });
}
