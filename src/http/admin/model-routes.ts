import type { FastifyInstance } from 'fastify';
import { filterModels, modelEntries } from '../../catalog/model-list.js';
import type { AdminDeps } from './admin-deps.js';
import { onlyQueryParams, queryString } from './request-body.js';
import { gatewayError } from '../../core/errors.js';

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 5_000;
/** What GET /api/models takes: another name (`q` for `search`, `providers` for `provider`) is a 400, not ignored. */
const LIST_PARAMS: ReadonlySet<string> = new Set(['provider', 'search', 'limit', 'offset']);

function count(raw: string | undefined, fallback: number, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (raw === undefined) return fallback;
  const value = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) throw gatewayError('invalid_query', `${name} must be a non-negative integer, got '${raw}'.`, { param: name });
  return Math.min(value, max);
}

/**
 * The model catalogue with what the dashboard needs: provider, context window, capabilities and the price
 * tollgate bills. `?provider=` filters, `?search=` matches id or name, `?limit=` / `?offset=` page.
 */
export function registerModelRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/models', async (request) => {
    onlyQueryParams(request, LIST_PARAMS);
    const provider = queryString(request, 'provider') || undefined;
    const config = deps.configService.current();
    if (provider !== undefined && !config.providers.has(provider)) {
      throw gatewayError('provider_not_found', `Unknown provider '${provider}'.`, { param: 'provider' });
    }
    const matching = filterModels(modelEntries(config), { provider, search: queryString(request, 'search') || undefined });
    const limit = count(queryString(request, 'limit'), DEFAULT_LIMIT, 'limit', MAX_LIMIT);
    const offset = count(queryString(request, 'offset'), 0, 'offset');
    return { object: 'list', total: matching.length, offset, data: matching.slice(offset, offset + limit) };
  });
}
