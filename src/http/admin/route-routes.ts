import type { FastifyInstance, FastifyRequest } from 'fastify';
import { routeHealthView } from '../../routing/route-health.js';
import { actorOf } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { jsonObjectBody } from './request-body.js';
import { gatewayError } from '../../core/errors.js';

/**
 * Route names may contain `/` (a route may be named like the `<provider>/<model>` it stands in for), so the
 * item path is a wildcard: `/api/routes/openai%2Fgpt-4o` and `/api/routes/openai/gpt-4o` both address the
 * route `openai/gpt-4o` (the router decodes the wildcard, `%2F` included).
 */
function routeName(request: FastifyRequest): string {
  return (request.params as { '*': string })['*'];
}

export function registerRouteRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const service = deps.configService;

  api.get('/routes', async () => ({ object: 'list', data: service.listRoutes() }));

  // `/api/routes/<name>/health`: live weights, breakers and health. A route literally named `.../health` wins.
  api.get('/routes/*', async (request) => {
    const name = routeName(request);
    if (!name.endsWith('/health') || service.current().routes.has(name)) return service.getRoute(name);
    const subject = name.slice(0, -'/health'.length);
    const view = routeHealthView(service.current(), subject, deps.health);
    if (!view) throw gatewayError('route_not_found', `No route or '<provider>/<model>' named '${subject}'.`);
    return view;
  });

  api.put('/routes/*', async (request, reply) => {
    const name = routeName(request);
    const { view, created } = await service.putRoute(name, jsonObjectBody(request), actorOf(request, deps));
    if (created) reply.code(201).header('location', `/api/routes/${encodeURIComponent(name)}`);
    return view;
  });

  api.delete('/routes/*', async (request, reply) => {
    // 204 when the route is gone; 200 with the file's route when deleting the API's override brings it back.
    const remaining = await service.deleteRoute(routeName(request), actorOf(request, deps));
    return remaining ? remaining : reply.code(204).send();
  });
}
