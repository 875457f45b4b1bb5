import type { FastifyInstance, FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import type { AuditFilter } from '../../store/audit-log.js';
import type { AuditEntry } from '../../config/views.js';
import type { AdminDeps } from './admin-deps.js';
import { parseExportFormat, sendExport } from './export-stream.js';
import { parsePageLimit } from './paging.js';
import { parseCursor, parseTimeRange } from './log-filters.js';
import { onlyQueryParams, queryString } from './request-body.js';

/** The service caps a page at this; the export reads pages of it. */
const MAX_LIMIT = 500;

const AUDIT_COLUMNS: ReadonlyArray<{ header: string; value: (row: AuditEntry) => unknown }> = [
  { header: 'id', value: (e) => e.id },
  { header: 'at', value: (e) => e.at },
  { header: 'version', value: (e) => e.version },
  { header: 'action', value: (e) => e.action },
  { header: 'target', value: (e) => e.target },
  { header: 'actor', value: (e) => `${e.actor.kind}:${e.actor.id}` },
  { header: 'before', value: (e) => e.before },
  { header: 'after', value: (e) => e.after },
];

/** The query parameters of the audit filters, then what the list and the export take. */
const AUDIT_FILTER_PARAMS = ['from', 'to', 'tz', 'action', 'target'];
const LIST_PARAMS = new Set([...AUDIT_FILTER_PARAMS, 'limit', 'before']);
const EXPORT_PARAMS = new Set([...AUDIT_FILTER_PARAMS, 'format']);

/** The audit filters of `GET /api/audit` and its export: `from`, `to` (see parseTime), `action`, `target`. */
function parseAuditFilter(request: FastifyRequest): AuditFilter {
  const filter: AuditFilter = parseTimeRange(request);
  for (const name of ['action', 'target'] as const) {
    const value = queryString(request, name);
    if (value === undefined || value === '') continue;
    if (value.length > 200) throw gatewayError('invalid_query', `${name} is longer than 200 characters.`, { param: name });
    filter[name] = value;
  }
  return filter;
}

/** The audit log, newest first, and its export (JSON lines carry every field; CSV the main ones), with the same filters. */
export function registerAuditRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/audit', async (request) => {
    onlyQueryParams(request, LIST_PARAMS);
    const limit = parsePageLimit(queryString(request, 'limit'), MAX_LIMIT);
    const before = parseCursor(request);
    const page = deps.configService.auditPage({ ...parseAuditFilter(request), limit, ...(before ? { before } : {}) });
    return { object: 'list', data: page.data, next_before: page.next_before };
  });

  api.get('/audit/export', async (request, reply) => {
    onlyQueryParams(request, EXPORT_PARAMS);
    const format = parseExportFormat(queryString(request, 'format'));
    const filter = parseAuditFilter(request);
    return sendExport(reply, format, 'tollgate-audit', AUDIT_COLUMNS, function* () {
      let before: string | undefined;
      for (;;) {
        const page = deps.configService.auditPage({ ...filter, limit: MAX_LIMIT, ...(before ? { before } : {}) });
        yield page.data;
        if (page.next_before === null) return;
        before = page.next_before;
      }
    });
  });
}
