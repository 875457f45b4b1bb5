import type { FastifyInstance } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import type { AdminDeps } from './admin-deps.js';
import { queryString } from './request-body.js';

/**
 * The response cache: `GET /api/cache` reports entries, the semantic index, hit ratios by tier and shadow-mode
 * would-be hits; `DELETE /api/cache` empties it, or only the entries of a model, key or team
 * (`?model=`, `?key_id=`, `?team_id=`, combined with and).
 */
const SELECTORS = new Set(['model', 'key_id', 'team_id']);

export function registerCacheRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/cache', async () => deps.cache.report());

  api.delete('/cache', async (request) => {
    // A misspelt selector (`?team=`, `?keyid=`) must not empty the whole cache.
    for (const name of Object.keys(request.query as Record<string, unknown>)) {
      if (!SELECTORS.has(name)) throw gatewayError('invalid_query', `Unknown query parameter '${quoteInput(name)}': DELETE /api/cache takes model, key_id and team_id (none empties the cache).`, { param: name });
    }
    const selector = {
      model: queryString(request, 'model'),
      keyId: queryString(request, 'key_id'),
      teamId: queryString(request, 'team_id'),
    };
    for (const [name, value] of Object.entries({ model: selector.model, key_id: selector.keyId, team_id: selector.teamId })) {
      if (value !== undefined && (value.length === 0 || value.length > 200)) throw gatewayError('invalid_query', `${name} must be 1 to 200 characters.`, { param: name });
    }
    const deleted = await deps.cache.delete(selector);
    return { deleted };
  });
}
