import type { FastifyInstance } from 'fastify';
import { gatewayError } from '../../core/errors.js';
import type { AdminDeps } from './admin-deps.js';
import { queryString } from './request-body.js';

/**
 * The response cache: `GET /api/cache` reports entries, the semantic index, hit ratios by tier and shadow-mode
 * would-be hits; `DELETE /api/cache` empties it, or only the entries of a model, key or team
 * (`?model=`, `?key_id=`, `?team_id=`, combined with and).
 */
export function registerCacheRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/cache', async () => deps.cache.report());

  api.delete('/cache', async (request) => {
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
