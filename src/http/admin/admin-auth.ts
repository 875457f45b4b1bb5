import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { isLoopbackAddress } from '../../config/address.js';
import type { Actor } from '../../config/views.js';
import { clientAddress, hasProxyHeader } from '../client-address.js';
import type { GatewayError } from '../../core/errors.js';
import type { AdminDeps } from './admin-deps.js';
import { gatewayError } from '../../core/errors.js';

/**
 * The client's address: the socket peer, or, behind a proxy named in `trusted_proxies`, the client it forwards
 * for. Never `request.ip`: a forwarded-for header from anyone else must not turn a remote client into a local one.
 */
function remoteAddress(request: FastifyRequest, deps: Pick<AdminDeps, 'configService'>): string {
  return clientAddress(request, deps.configService.current().settings.trustedProxies) || 'unknown';
}

/** Who is making a change, for the audit log: how they were let in and from where, never the key itself. */
export function actorOf(request: FastifyRequest, deps: Pick<AdminDeps, 'adminKey' | 'configService'>): Actor {
  return { kind: deps.adminKey ? 'admin-key' : 'loopback', id: remoteAddress(request, deps) };
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function bearerToken(header: string | undefined): string | null {
  const match = header ? /^Bearer\s+(\S.*)$/i.exec(header.trim()) : null;
  return match?.[1]?.trim() ?? null;
}

function invalidAdminKey(message: string): GatewayError {
  return gatewayError('invalid_admin_key', message, { headers: { 'www-authenticate': 'Bearer realm="tollgate-admin"' } });
}

/**
 * The `onRequest` hook guarding /api. It runs before the body is read, so unauthenticated clients cannot
 * make the gateway parse anything. Both sides are hashed first so the comparison takes the same time
 * whatever the length or content of the presented key.
 */
export function adminAuthHook(deps: Pick<AdminDeps, 'adminKey' | 'log' | 'configService'>): onRequestAsyncHookHandler {
  const expected = deps.adminKey ? sha256(deps.adminKey) : null;
  let proxyWarned = false;
  return async (request) => {
    if (expected) {
      const token = bearerToken(request.headers.authorization);
      if (token === null) throw invalidAdminKey('The management API requires the admin key: send Authorization: Bearer <TOLLGATE_ADMIN_KEY>.');
      if (!timingSafeEqual(sha256(token), expected)) {
        deps.log.warn({ remote: remoteAddress(request, deps), url: request.url.split('?')[0] }, 'admin API request with a wrong admin key');
        throw invalidAdminKey('The admin key is not valid.');
      }
      return;
    }
    const { trustedProxies } = deps.configService.current().settings;
    if (!proxyWarned && trustedProxies.size === 0 && hasProxyHeader(request) && isLoopbackAddress(request.socket.remoteAddress)) {
      // Behind a reverse proxy on this host every client arrives from loopback, so an open /api is open to all.
      proxyWarned = true;
      deps.log.warn(
        { url: request.url.split('?')[0] },
        'the admin API is open to loopback clients and a request came through a proxy (X-Forwarded-For / Forwarded / X-Real-IP): ' +
          'behind a reverse proxy on this host every client looks local. Set TOLLGATE_ADMIN_KEY, or name the proxy in settings.trusted_proxies',
      );
    }
    if (isLoopbackAddress(remoteAddress(request, deps))) return;
    throw gatewayError('admin_api_loopback_only', 'The management API answers only clients on this machine because no admin key is configured. Set TOLLGATE_ADMIN_KEY to use it from elsewhere.');
  };
}
