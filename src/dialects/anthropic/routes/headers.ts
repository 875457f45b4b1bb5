import type { FastifyRequest } from 'fastify';
import { bearerToken, headerString } from '../../../http/request-headers.js';

/** The key a client presents: `x-api-key` (how Anthropic SDKs send `apiKey`) or `Authorization: Bearer` (their `authToken`). */
export function presentedCredential(request: FastifyRequest): string | null {
  return headerString(request, 'x-api-key') ?? bearerToken(request);
}

/**
 * The beta opt-ins of the client's `anthropic-beta` header (a comma-separated list, possibly over several headers),
 * for an upstream that takes them in the body (Claude on Bedrock's `anthropic_beta`); empty when none.
 */
export function anthropicBetas(request: FastifyRequest): string[] {
  const value = request.headers['anthropic-beta'];
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return text.split(',').map((beta) => beta.trim()).filter((beta) => beta !== '');
}
