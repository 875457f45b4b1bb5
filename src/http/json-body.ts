import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.js';

/**
 * Plain JSON.parse for request bodies: it is on every request, and the prototype-poisoning scan of the
 * default parser costs measurable time. JSON.parse only ever creates an own `__proto__` property, which is
 * harmless unless copied key by key into another object; code that merges request data (the config merge
 * patch) skips such keys.
 */
export function parseJsonBody(_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, value?: unknown) => void): void {
  const text = typeof body === 'string' ? body : body.toString('utf8');
  if (text.length === 0) {
    done(GatewayError.badRequest('The request body is empty; expected a JSON object.', null, 'invalid_json'));
    return;
  }
  try {
    done(null, JSON.parse(text));
  } catch (err) {
    done(GatewayError.badRequest(`We could not parse the JSON body of your request: ${(err as Error).message}.`, null, 'invalid_json'));
  }
}
