import type { FastifyRequest } from 'fastify';
import { isLoopbackAddress, normalizeAddress } from '../config/address.js';
import type { Settings } from '../config/runtime.js';

/**
 * The client's address. The socket peer, unless the peer is a proxy the operator named in `trusted_proxies`:
 * then X-Forwarded-For is read from the right (each trusted proxy appends the address it saw) and the first
 * address that is not a trusted proxy is the client. Deliberately not fastify's `request.ip` with
 * `trustProxy`: a forwarded-for header must never turn a remote client into a "local" one unless the operator
 * said which proxy may speak for it.
 */
export function clientAddress(request: FastifyRequest, trusted: ReadonlySet<string>): string {
  const peer = normalizeAddress(request.socket.remoteAddress ?? '');
  if (trusted.size === 0 || !trusted.has(peer)) return peer;
  const header = request.headers['x-forwarded-for'];
  const chain = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(chain[i] ?? '');
    if (hop === '') continue;
    if (!trusted.has(hop)) return hop;
  }
  // Only trusted proxies in the chain (or none): the innermost proxy is the client.
  return peer;
}

/** Whether the request comes from another machine (see `clientAddress`). */
export function isRemoteClient(request: FastifyRequest, settings: Settings): boolean {
  return !isLoopbackAddress(clientAddress(request, settings.trustedProxies));
}

/** Whether the request carries a header a reverse proxy adds: then its socket peer may not be the client. */
export function hasProxyHeader(request: FastifyRequest): boolean {
  const headers = request.headers;
  return headers['x-forwarded-for'] !== undefined || headers.forwarded !== undefined || headers['x-real-ip'] !== undefined;
}
