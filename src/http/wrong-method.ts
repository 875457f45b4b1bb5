import type { FastifyRequest } from 'fastify';
import type { GatewayError } from '../core/errors.js';
import { gatewayError } from '../core/errors.js';
import { quoteInput } from '../core/quote-input.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/**
 * The 405 for a URL that is served, but not with the request's method (`GET /v1/chat/completions` opened in a
 * browser or sent by curl without `-d`), with the methods that are in `Allow`; null when no method serves the URL.
 * An "unknown URL" there would send the client looking for another base URL. Only on the way to a 404: not hot.
 */
export function wrongMethod(request: FastifyRequest): GatewayError | null {
  const path = request.url.split('?')[0] ?? '';
  const serves = (method: string): boolean => request.server.findRoute({ method, url: path }) !== null;
  let allowed: string[];
  try {
    // A route of this very method that handed the request on to the 404 itself (a Gemini method it does not know).
    if (serves(request.method)) return null;
    allowed = METHODS.filter(serves);
  } catch {
    return null;
  }
  if (allowed.length === 0) return null;
  const allow = allowed.join(', ');
  return gatewayError('method_not_allowed', `Method ${quoteInput(request.method, 20)} is not allowed on ${quoteInput(path)}; it takes ${allow}.`, { headers: { allow } });
}
