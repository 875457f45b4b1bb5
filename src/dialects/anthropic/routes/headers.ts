import type { FastifyRequest } from 'fastify';
import { bearerToken, headerString } from '../../../http/request-headers.js';

/** The key a client presents: `x-api-key` (how Anthropic SDKs send `apiKey`) or `Authorization: Bearer` (their `authToken`). */
export function presentedCredential(request: FastifyRequest): string | null {
  return headerString(request, 'x-api-key') ?? bearerToken(request);
}
