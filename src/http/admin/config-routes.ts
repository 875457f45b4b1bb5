import type { FastifyInstance, FastifyReply } from 'fastify';
import { fromUtf8, withDepthLimit } from '../json-body.js';
import { actorOf } from './admin-auth.js';
import type { AdminDeps } from './admin-deps.js';
import { ifMatchVersions, jsonObjectBody, queryString } from './request-body.js';
import { gatewayError } from '../../core/errors.js';

/** The whole config document: the effective view, the API layer, its schema, and whole-layer writes. */
export function registerConfigRoutes(api: FastifyInstance, deps: AdminDeps): void {
  const service = deps.configService;

  // RFC 7396 clients label merge patches with their own media type; the content is plain JSON. Read as bytes, as
  // application/json bodies are (json-body.ts): bytes that are not UTF-8 are a 400, not U+FFFD in the stored config.
  api.addContentTypeParser('application/merge-patch+json', { parseAs: 'buffer' }, fromUtf8(withDepthLimit(api.getDefaultJsonParser('error', 'error'))));

  // The version is the ETag: a writer sends it back as If-Match, so a change made since it read is not undone.
  const tagged = (reply: FastifyReply, version: number): void => void reply.header('etag', `"${version}"`);

  api.get('/config', async (request, reply) => {
    const layer = queryString(request, 'layer') ?? 'effective';
    if (layer !== 'effective' && layer !== 'api') throw gatewayError('invalid_query', `Unknown layer '${layer}': expected 'effective' or 'api'.`, { param: 'layer' });
    const view = service.describe();
    tagged(reply, view.version);
    return layer === 'effective' ? view : service.apiLayer();
  });

  api.get('/config/schema', async (_request, reply) => {
    return reply.type('application/schema+json; charset=utf-8').send(JSON.stringify(service.jsonSchema()));
  });

  // PUT replaces everything set through the API; the file and environment layers are untouched.
  api.put('/config', async (request, reply) => {
    const view = await service.replaceApiLayer(jsonObjectBody(request), actorOf(request, deps), ifMatchVersions(request));
    tagged(reply, view.version);
    return view;
  });

  api.patch('/config', async (request, reply) => {
    const view = await service.patchApiLayer(jsonObjectBody(request), actorOf(request, deps), ifMatchVersions(request));
    tagged(reply, view.version);
    return view;
  });

  // A dry run of PUT: the same body and the same 400 naming the field, or the warnings of the config it would make.
  api.post('/config/validate', async (request) => service.validateApiLayer(jsonObjectBody(request)));
}
