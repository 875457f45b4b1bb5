import type { FastifyInstance } from 'fastify';
import { actorOf } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { jsonObjectBody } from './request-body.js';
import { gatewayError } from '../../core/errors.js';

interface ProviderParams {
  provider: string;
}

interface KeyParams extends ProviderParams {
  id: string;
}

function providerPath(name: string): string {
  return `/api/providers/${encodeURIComponent(name)}`;
}

/** Providers and their keys. Key values come back masked by the service; only the key id addresses a key. */
export function registerProviderRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const service = deps.configService;

  api.get('/providers', async () => ({ object: 'list', data: service.listProviders() }));

  api.get<{ Params: ProviderParams }>('/providers/:provider', async (request) => service.getProvider(request.params.provider));

  api.put<{ Params: ProviderParams }>('/providers/:provider', async (request, reply) => {
    const { provider } = request.params;
    const { view, created } = await service.putProvider(provider, jsonObjectBody(request), actorOf(request, deps));
    if (created) reply.code(201).header('location', providerPath(provider));
    return view;
  });

  api.delete<{ Params: ProviderParams }>('/providers/:provider', async (request, reply) => {
    // 204 when the provider is gone; 200 with what remains when the file or tollgate itself still defines it.
    const remaining = await service.deleteProvider(request.params.provider, actorOf(request, deps));
    return remaining ? remaining : reply.code(204).send();
  });

  api.get<{ Params: ProviderParams }>('/providers/:provider/keys', async (request) => ({
    object: 'list',
    data: service.getProvider(request.params.provider).keys,
  }));

  api.post<{ Params: ProviderParams }>('/providers/:provider/keys', async (request, reply) => {
    const { provider } = request.params;
    const key = await service.addProviderKey(provider, jsonObjectBody(request), actorOf(request, deps));
    return reply.code(201).header('location', `${providerPath(provider)}/keys/${encodeURIComponent(key.id)}`).send(key);
  });

  api.get<{ Params: KeyParams }>('/providers/:provider/keys/:id', async (request) => {
    const { provider, id } = request.params;
    const key = service.getProvider(provider).keys.find((candidate) => candidate.id === id);
    if (!key) throw gatewayError('key_not_found', `No key named '${id}'.`);
    return key;
  });

  api.patch<{ Params: KeyParams }>('/providers/:provider/keys/:id', async (request) => {
    const { provider, id } = request.params;
    return service.patchProviderKey(provider, id, jsonObjectBody(request), actorOf(request, deps));
  });

  api.delete<{ Params: KeyParams }>('/providers/:provider/keys/:id', async (request, reply) => {
    await service.deleteProviderKey(request.params.provider, request.params.id, actorOf(request, deps));
    return reply.code(204).send();
  });
}
