import type { FastifyRequest } from 'fastify';
import { gatewayError } from '../../core/errors.js';

/**
 * The body of a write. An absent body is refused rather than read as `{}`: a bare `PUT /api/config` would
 * otherwise wipe every change made through the API.
 */
export function jsonObjectBody(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null) {
    throw gatewayError('invalid_json', 'The request body is empty; expected a JSON object sent with Content-Type: application/json.');
  }
  if (typeof body !== 'object' || Array.isArray(body)) throw gatewayError('invalid_json', 'The request body must be a JSON object.');
  return body as Record<string, unknown>;
}

/** One query parameter as a string; repeated parameters are refused rather than silently picking one. */
export function queryString(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw gatewayError('invalid_query', `Query parameter '${name}' must be given once.`, { param: name });
  return value;
}
