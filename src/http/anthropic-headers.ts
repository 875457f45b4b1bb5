import type { FastifyRequest } from 'fastify';

export function headerString(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first ? first.trim() || null : null;
}

/**
 * The key a client presents: `x-api-key` (how Anthropic SDKs send `apiKey`) or `Authorization: Bearer` (their
 * `authToken`). A copy of the `/v1` helper, so the two dialects' routes do not depend on each other.
 */
export function presentedCredential(request: FastifyRequest): string | null {
  const apiKey = headerString(request, 'x-api-key');
  if (apiKey) return apiKey;
  const authorization = headerString(request, 'authorization');
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim() || null;
}
