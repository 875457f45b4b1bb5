import type { FastifyInstance } from 'fastify';
import type { AdminDeps } from './admin-deps.js';
import { checkListedPlugins } from './plugin-names.js';
import { checkMcpServerNames } from './mcp-server-names.js';
import { checkMcpAllowNames, checkModelAllowList } from './allow-list-names.js';
import { checkMcpAllowCeiling } from './mcp-allow-ceiling.js';
import { checkModelLimitNames } from '../../governance/model-limits.js';
import { gatewayError } from '../../core/errors.js';
import { parsePageLimit } from './paging.js';
import { keyCursor, parseKeyCursor, parseKeyFields, parseKeyIds, projectKey } from './key-query.js';
import { sendJsonList } from './json-list-stream.js';
import type { VirtualKeyView } from '../../governance/types.js';
import { jsonObjectBody, onlyQueryParams, queryString } from './request-body.js';
import { actorOf } from './admin-auth.js';
import { settingsOf } from './governance-audit.js';

/** The largest page of GET /api/keys. */
const MAX_KEYS_PAGE = 1_000;
/** What GET /api/keys takes: another name (a misspelt `limit`, a filter it does not have) is a 400, not ignored. */
const LIST_PARAMS: ReadonlySet<string> = new Set(['limit', 'after', 'q', 'ids', 'fields']);

interface IdParams {
  id: string;
}

function keyPath(id: string): string {
  return `/api/keys/${encodeURIComponent(id)}`;
}

/**
 * Virtual keys. The secret (`key`) appears only in the answers to create and rotate; the hash never leaves
 * the store.
 */
export function registerKeyRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const store = deps.governance;

  api.post('/keys', async (request, reply) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    checkModelLimitNames(body, deps.configService.current());
    checkMcpServerNames(body, deps.configService.current());
    checkModelAllowList(body, deps.configService.current());
    checkMcpAllowNames(body, deps.configService.current());
    checkMcpAllowCeiling(body, store);
    const { record, key } = await store.createKey(body);
    await deps.configService.auditChange(actorOf(request, deps), 'key.created', `keys.${record.id}`, null, settingsOf(record));
    return reply.code(201).header('location', keyPath(record.id)).send({ ...record, key });
  });

  // Paged when `limit` or `after` is given (`after`: the previous page's `next_after`, or the id of its last key; `q`:
  // text in the name, id or prefix);
  // without either, every key, as before. `ids`: just those keys (what a page naming keys by id needs); `fields`: only
  // those fields of each key (and its id).
  api.get('/keys', async (request, reply) => {
    onlyQueryParams(request, LIST_PARAMS);
    const rawLimit = queryString(request, 'limit');
    // An empty `after` is no cursor, as an empty cursor or filter is on every list (`/api/logs?before=`, `q=`).
    const after = queryString(request, 'after') || undefined;
    // `after` pages: without `limit` it takes the default page size (it was ignored, and every key answered from the first).
    const limit = rawLimit === undefined && after === undefined ? undefined : parsePageLimit(rawLimit, MAX_KEYS_PAGE);
    const q = queryString(request, 'q')?.trim().toLowerCase().slice(0, 200) ?? '';
    const rawIds = queryString(request, 'ids');
    const rawFields = queryString(request, 'fields');
    const fields = rawFields === undefined ? undefined : parseKeyFields(rawFields);
    const shown = (keys: VirtualKeyView[]): Array<Partial<VirtualKeyView>> => (fields ? keys.map((key) => projectKey(key, fields)) : keys);
    if (rawIds !== undefined) {
      if (rawLimit !== undefined || after !== undefined || q) throw gatewayError('invalid_query', 'ids names the keys to answer: it does not take limit, after or q.', { param: 'ids' });
      return { object: 'list', data: shown(store.keysByIds(parseKeyIds(rawIds))) };
    }
    const matches = (key: { name: string; id: string; key_prefix: string }): boolean =>
      !q || key.name.toLowerCase().includes(q) || key.id.toLowerCase().includes(q) || key.key_prefix.toLowerCase().includes(q);
    if (limit === undefined) {
      async function* chunks(): AsyncGenerator<Array<Partial<VirtualKeyView>>> {
        for await (const keys of store.matchingKeys(matches)) yield shown(keys);
      }
      return sendJsonList(reply, chunks());
    }
    // The cursor is found among all keys, then the search applies: a key renamed since the last page so that it no
    // longer matches `q` still marks where the next page starts (it was an unknown cursor, and the listing stopped).
    const from = after === undefined ? undefined : parseKeyCursor(after);
    const page = from === null ? undefined : await store.keyPage(limit, from, matches);
    if (!page) throw gatewayError('invalid_query', `Unknown cursor '${(after ?? '').slice(0, 60)}': pass the previous page's next_after.`, { param: 'after' });
    const { data, hasMore } = page;
    const last = data.at(-1);
    return { object: 'list', data: shown(data), has_more: hasMore, next_after: hasMore && last ? keyCursor(last) : null };
  });

  api.get<{ Params: IdParams }>('/keys/:id', async (request) => store.getKey(request.params.id));

  api.patch<{ Params: IdParams }>('/keys/:id', async (request) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    checkModelLimitNames(body, deps.configService.current());
    checkMcpServerNames(body, deps.configService.current());
    checkModelAllowList(body, deps.configService.current());
    checkMcpAllowNames(body, deps.configService.current());
    checkMcpAllowCeiling(body, store, request.params.id);
    // The key as this change found it, read with the change: another change committed in between is not this one's.
    const { before: previous, after: updated } = await store.changeKey(request.params.id, body);
    const before = previous.budget ?? null;
    await deps.configService.auditChange(actorOf(request, deps), 'key.updated', `keys.${updated.id}`, settingsOf(previous), settingsOf(updated));
    // A budget lowered below what was spent crosses its thresholds as a charge would (budget alerts), and so does a
    // period change that moves the spend past one (to `total`: the key's lifetime spend).
    if ((updated.budget ?? null) !== before || updated.budget_period !== previous.budget_period) deps.alerts.budgetChanged('key', updated.id, before, previous.spend);
    return updated;
  });

  api.delete<{ Params: IdParams }>('/keys/:id', async (request, reply) => {
    const previous = await store.deleteKey(request.params.id);
    await deps.configService.auditChange(actorOf(request, deps), 'key.deleted', `keys.${previous.id}`, settingsOf(previous), null);
    return reply.code(204).send();
  });

  // A new secret; the old one stops working once this answers.
  api.post<{ Params: IdParams }>('/keys/:id/rotate', async (request) => {
    const { record, key, previous } = await store.rotateKey(request.params.id);
    // The secrets are not recorded: the prefix shown before and after says that it changed.
    await deps.configService.auditChange(actorOf(request, deps), 'key.rotated', `keys.${record.id}`, settingsOf(previous), settingsOf(record));
    return { ...record, key };
  });
}
