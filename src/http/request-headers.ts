import type { FastifyRequest } from 'fastify';

/** A header's first value, trimmed; null when absent or blank. */
export function headerString(request: FastifyRequest, name: string): string | null {
  const value = request.headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first ? first.trim() || null : null;
}

/** The token of `Authorization: Bearer <token>`, or null. */
export function bearerToken(request: FastifyRequest): string | null {
  const authorization = headerString(request, 'authorization');
  const match = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null;
  return match?.[1]?.trim() || null;
}
