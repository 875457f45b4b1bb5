import type { FastifyInstance } from 'fastify';
import { quoteInput } from '../../core/quote-input.js';
import { MAX_LOG_LIMIT } from '../../governance/governance-store.js';
import type { RequestLogEntry } from '../../governance/types.js';
import type { AdminDeps } from './admin-deps.js';
import { parseExportFormat, sendExport } from './export-stream.js';
import { LOG_FILTER_PARAMS, parseCursor, parseLogFilter } from './log-filters.js';
import { parsePageLimit } from './paging.js';
import { MAX_SHIPPING_EXPORT, parseWrittenAfter, SHIPPING_PARAMS } from './log-shipping.js';
import { onlyQueryParams, queryString } from './request-body.js';
import { gatewayError } from '../../core/errors.js';

/** What the list and the export take: the filters, and a page's size and cursor, or the export's format. */
const LIST_PARAMS = new Set<string>([...LOG_FILTER_PARAMS, ...SHIPPING_PARAMS, 'limit', 'before']);
const EXPORT_PARAMS = new Set<string>([...LOG_FILTER_PARAMS, ...SHIPPING_PARAMS, 'format', 'limit']);

/** A list page's size when the query names none. */
const DEFAULT_LIST_LIMIT = 50;

/** The export's page size: one page in memory at a time. */
const EXPORT_PAGE = 500;

/** CSV columns of a log export: every field of an entry (lists and objects as JSON), as JSON lines carry them. */
const LOG_COLUMNS: ReadonlyArray<{ header: string; value: (row: RequestLogEntry) => unknown }> = [
  { header: 'id', value: (e) => e.id },
  { header: 'at', value: (e) => e.at },
  { header: 'dialect', value: (e) => e.dialect },
  { header: 'path', value: (e) => e.path },
  { header: 'operation', value: (e) => e.operation },
  { header: 'key_id', value: (e) => e.key_id },
  { header: 'team_id', value: (e) => e.team_id },
  { header: 'route', value: (e) => e.route },
  { header: 'model', value: (e) => e.model },
  { header: 'provider', value: (e) => e.provider },
  { header: 'upstream_model', value: (e) => e.upstream_model },
  { header: 'status', value: (e) => e.status },
  { header: 'error_type', value: (e) => e.error_type },
  { header: 'error_code', value: (e) => e.error_code },
  { header: 'error_message', value: (e) => e.error_message },
  { header: 'stream', value: (e) => e.stream },
  { header: 'cancelled', value: (e) => e.cancelled },
  { header: 'fallback', value: (e) => e.fallback },
  { header: 'attempts', value: (e) => e.attempts?.length },
  { header: 'attempt_list', value: (e) => e.attempts },
  { header: 'prompt_tokens', value: (e) => e.prompt_tokens },
  { header: 'completion_tokens', value: (e) => e.completion_tokens },
  { header: 'cached_tokens', value: (e) => e.cached_tokens },
  { header: 'cache_write_tokens', value: (e) => e.cache_write_tokens },
  { header: 'reasoning_tokens', value: (e) => e.reasoning_tokens },
  { header: 'cost_usd', value: (e) => e.cost_usd },
  { header: 'priced', value: (e) => e.priced },
  { header: 'estimated', value: (e) => e.estimated },
  { header: 'cache', value: (e) => e.cache },
  { header: 'guardrails', value: (e) => e.guardrails },
  { header: 'duration_ms', value: (e) => e.duration_ms },
  { header: 'upstream_ms', value: (e) => e.upstream_ms },
  { header: 'first_token_ms', value: (e) => e.first_token_ms },
  { header: 'overhead_ms', value: (e) => e.overhead_ms },
  { header: 'user', value: (e) => e.user },
  { header: 'metadata', value: (e) => e.metadata },
  { header: 'request_body', value: (e) => e.request_body },
  { header: 'response_body', value: (e) => e.response_body },
  { header: 'write_seq', value: (e) => e.write_seq },
];

/** The request log: filtered pages newest first, one entry by id, and exports of a filter's whole result. */
export function registerLogRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/logs', async (request) => {
    onlyQueryParams(request, LIST_PARAMS);
    const shipping = parseWrittenAfter(request, DEFAULT_LIST_LIMIT, MAX_LOG_LIMIT);
    await deps.governance.logWritesSettled();
    if (shipping) {
      const page = deps.governance.requestLogWrittenAfter(shipping);
      return { object: 'list', data: page.data, next_before: null, next_written_after: page.next_written_after, has_more: page.has_more };
    }
    const limit = parsePageLimit(queryString(request, 'limit'), MAX_LOG_LIMIT);
    const before = parseCursor(request);
    const page = deps.governance.requestLogPage({ ...parseLogFilter(request), limit, ...(before ? { before } : {}) });
    return { object: 'list', data: page.data, next_before: page.next_before };
  });

  api.get('/logs/export', async (request, reply) => {
    onlyQueryParams(request, EXPORT_PARAMS);
    const format = parseExportFormat(queryString(request, 'format'));
    const shipping = parseWrittenAfter(request, MAX_SHIPPING_EXPORT, MAX_SHIPPING_EXPORT);
    if (shipping) {
      if (request.method !== 'HEAD') await deps.governance.logWritesSettled();
      // The page is read before the headers go, so the cursor they carry is that of the records in the body.
      const page = deps.governance.requestLogWrittenAfter(shipping);
      reply.header('x-tollgate-next-written-after', String(page.next_written_after)).header('x-tollgate-has-more', String(page.has_more));
      return sendExport(reply, format, 'tollgate-requests', LOG_COLUMNS, function* () {
        for (let at = 0; at < page.data.length; at += EXPORT_PAGE) yield page.data.slice(at, at + EXPORT_PAGE);
      });
    }
    if (queryString(request, 'limit') !== undefined) throw gatewayError('invalid_query', 'limit goes with written_after: without it the export answers the whole result.', { param: 'limit' });
    const filter = parseLogFilter(request);
    if (request.method !== 'HEAD') await deps.governance.logWritesSettled();
    return sendExport(reply, format, 'tollgate-requests', LOG_COLUMNS, function* () {
      let before: string | undefined;
      for (;;) {
        const page = deps.governance.requestLogPage({ ...filter, limit: EXPORT_PAGE, ...(before ? { before } : {}) });
        yield page.data;
        if (page.next_before === null) return;
        before = page.next_before;
      }
    });
  });

  // The id is the `x-request-id` the client got with its answer.
  api.get<{ Params: { id: string } }>('/logs/:id', async (request) => {
    await deps.governance.logWritesSettled();
    const entry = deps.governance.requestLogEntry(request.params.id);
    if (!entry) throw gatewayError('request_not_found', `No request with id '${quoteInput(request.params.id, 100)}' in the request log (it may be older than the log keeps).`);
    return entry;
  });
}
