import type { Socket } from 'node:net';
import type { FastifyRequest } from 'fastify';
import { isLoopbackAddress, normalizeAddress } from '../config/address.js';
import type { Settings } from '../core/config.js';

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

/** Loopback or not, per connection: a socket's peer does not change, so it is worked out once per connection. */
const loopbackPeers = new WeakMap<Socket, boolean>();

function peerIsLoopback(socket: Socket): boolean {
  let loopback = loopbackPeers.get(socket);
  if (loopback === undefined) {
    loopback = isLoopbackAddress(socket.remoteAddress);
    loopbackPeers.set(socket, loopback);
  }
  return loopback;
}

/** Whether the request comes from another machine (see `clientAddress`). */
export function isRemoteClient(request: FastifyRequest, settings: Settings): boolean {
  // Without trusted proxies the client is the peer, whatever the headers say.
  if (settings.trustedProxies.size === 0) return !peerIsLoopback(request.socket);
  return !isLoopbackAddress(clientAddress(request, settings.trustedProxies));
}

/** Whether the request carries a header a reverse proxy adds: then its socket peer may not be the client. */
export function hasProxyHeader(request: FastifyRequest): boolean {
  const headers = request.headers;
  return headers['x-forwarded-for'] !== undefined || headers.forwarded !== undefined || headers['x-real-ip'] !== undefined;
}
