import { createHash, timingSafeEqual } from 'node:crypto';
import { isIPv4 } from 'node:net';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Actor } from '../../config/views.js';
import { GatewayError } from '../../errors.js';
import type { AdminDeps } from './admin-deps.js';

/** 127.0.0.0/8, ::1 and IPv4-mapped 127.x (what a dual-stack socket reports for an IPv4 loopback client). */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const v4 = address.toLowerCase().startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  if (isIPv4(v4)) return v4.startsWith('127.');
  return address === '::1' || address === '0:0:0:0:0:0:0:1';
}

/**
 * The peer's address as the socket reports it. Deliberately not `request.ip`: a forwarded-for header must
 * never turn a remote client into a "loopback" one.
 */
function remoteAddress(request: FastifyRequest): string {
  return request.socket.remoteAddress ?? 'unknown';
}

/** Who is making a change, for the audit log: how they were let in and from where, never the key itself. */
export function actorOf(request: FastifyRequest, deps: Pick<AdminDeps, 'adminKey'>): Actor {
  return { kind: deps.adminKey ? 'admin-key' : 'loopback', id: remoteAddress(request) };
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function bearerToken(header: string | undefined): string | null {
  const match = header ? /^Bearer\s+(\S.*)$/i.exec(header.trim()) : null;
  return match?.[1]?.trim() ?? null;
}

function invalidAdminKey(message: string): GatewayError {
  return new GatewayError({
    status: 401,
    type: 'authentication_error',
    code: 'invalid_admin_key',
    message,
    headers: { 'www-authenticate': 'Bearer realm="tollgate-admin"' },
  });
}

/**
 * The `onRequest` hook guarding /api. It runs before the body is read, so unauthenticated clients cannot
 * make the gateway parse anything. Both sides are hashed first so the comparison takes the same time
 * whatever the length or content of the presented key.
 */
export function adminAuthHook(deps: Pick<AdminDeps, 'adminKey' | 'log'>): onRequestAsyncHookHandler {
  const expected = deps.adminKey ? sha256(deps.adminKey) : null;
  return async (request) => {
    if (expected) {
      const token = bearerToken(request.headers.authorization);
      if (token === null) throw invalidAdminKey('The management API requires the admin key: send Authorization: Bearer <TOLLGATE_ADMIN_KEY>.');
      if (!timingSafeEqual(sha256(token), expected)) {
        deps.log.warn({ remote: remoteAddress(request), url: request.url.split('?')[0] }, 'admin API request with a wrong admin key');
        throw invalidAdminKey('The admin key is not valid.');
      }
      return;
    }
    if (isLoopback(request.socket.remoteAddress)) return;
    throw new GatewayError({
      status: 403,
      type: 'permission_error',
      code: 'admin_api_loopback_only',
      message: 'The management API answers only clients on this machine because no admin key is configured. Set TOLLGATE_ADMIN_KEY to use it from elsewhere.',
    });
  };
}
