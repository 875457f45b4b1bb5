import type { FastifyInstance } from 'fastify';
import type { AdminDeps } from './admin-deps.js';
import { checkListedPlugins } from './plugin-names.js';
import { jsonObjectBody } from './request-body.js';

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
    const { record, key } = await store.createKey(body);
    return reply.code(201).header('location', keyPath(record.id)).send({ ...record, key });
  });

  api.get('/keys', async () => ({ object: 'list', data: store.listKeys() }));

  api.get<{ Params: IdParams }>('/keys/:id', async (request) => store.getKey(request.params.id));

  api.patch<{ Params: IdParams }>('/keys/:id', async (request) => {
    const body = jsonObjectBody(request);
    checkListedPlugins(body, deps.configService.current());
    return store.updateKey(request.params.id, body);
  });

  api.delete<{ Params: IdParams }>('/keys/:id', async (request, reply) => {
    await store.deleteKey(request.params.id);
    return reply.code(204).send();
  });

  // A new secret; the old one stops working once this answers.
  api.post<{ Params: IdParams }>('/keys/:id/rotate', async (request) => {
    const { record, key } = await store.rotateKey(request.params.id);
    return { ...record, key };
  });
}
