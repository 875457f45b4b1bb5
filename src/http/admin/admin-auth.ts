import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { isLoopbackAddress } from '../../config/address.js';
import type { Actor } from '../../config/views.js';
import { clientAddress, hasProxyHeader, namesThisMachine } from '../client-address.js';
import type { GatewayError } from '../../core/errors.js';
import type { AdminDeps } from './admin-deps.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { sessionToken, type AdminSessions } from './admin-sessions.js';
import type { AdminKeyThrottle } from './admin-key-throttle.js';

/** Methods that change something: refused when a browser sends them from another site. */
const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Cross-site request forgery: a page on another site can make a browser send requests here (with the dashboard's
 * cookie, or to a loopback-open API). Browsers say where a request comes from (`Origin`, `Sec-Fetch-Site`); a
 * state-changing call whose origin is another site is refused. Scripts and CLIs send neither header and pass.
 */
function checkSameSite(request: FastifyRequest): void {
  if (!UNSAFE_METHODS.has(request.method)) return;
  // Modern browsers say it outright (and behind a proxy that rewrites Host this is the only reliable signal).
  const fetchSite = request.headers['sec-fetch-site'];
  if (fetchSite === 'same-origin' || fetchSite === 'none') return;
  if (fetchSite !== undefined) throw crossSite();
  const origin = request.headers.origin;
  if (origin === undefined) return;
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw crossSite();
  }
  if (host !== request.headers.host) throw crossSite();
}

function crossSite(): GatewayError {
  return gatewayError('cross_site_request', 'A state-changing management API call from another site is refused (cross-site request protection).');
}

/** Paths the hook lets through to their handler, which checks the admin key itself (signing in, signing out). */
const SESSION_PATH = '/api/session';

/**
 * The client's address: the socket peer, or, behind a proxy named in `trusted_proxies`, the client it forwards
 * for. Never `request.ip`: a forwarded-for header from anyone else must not turn a remote client into a local one.
 */
export function remoteAddress(request: FastifyRequest, deps: Pick<AdminDeps, 'configService'>): string {
  return clientAddress(request, deps.configService.current().settings) || 'unknown';
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

/** Both sides hashed first, so the comparison takes the same time whatever the presented key's length or content. */
export function adminKeyMatches(presented: string, expected: Buffer): boolean {
  return timingSafeEqual(sha256(presented), expected);
}

export function expectedAdminKey(adminKey: string | null): Buffer | null {
  return adminKey ? sha256(adminKey) : null;
}

export function invalidAdminKey(message: string): GatewayError {
  return gatewayError('invalid_admin_key', message, { headers: { 'www-authenticate': 'Bearer realm="tollgate-admin"' } });
}

/** The refusal of an address that sent too many wrong admin keys (see AdminKeyThrottle). */
export function tooManyAttempts(seconds: number): GatewayError {
  return gatewayError('too_many_admin_key_attempts', `Too many wrong admin keys from this address: try again in ${seconds} s.`, { headers: { 'retry-after': String(seconds) } });
}

/**
 * The `onRequest` hook guarding /api. It runs before the body is read, so unauthenticated clients cannot
 * make the gateway parse anything. Both sides are hashed first so the comparison takes the same time
 * whatever the length or content of the presented key.
 */
export function adminAuthHook(deps: Pick<AdminDeps, 'adminKey' | 'log' | 'configService'>, sessions: AdminSessions, throttle: AdminKeyThrottle): onRequestAsyncHookHandler {
  const expected = deps.adminKey ? sha256(deps.adminKey) : null;
  let proxyWarned = false;
  return async (request) => {
    checkSameSite(request);
    if (request.url.split('?')[0] === SESSION_PATH) return;
    if (expected) {
      const token = bearerToken(request.headers.authorization);
      if (token === null) {
        // The dashboard's sign-in: a session cookie stands for the admin key.
        const session = sessionToken(request.headers.cookie);
        if (session !== null && sessions.valid(session)) return;
        throw invalidAdminKey('The management API requires the admin key: send Authorization: Bearer <TOLLGATE_ADMIN_KEY>, or sign in to the dashboard.');
      }
      const remote = remoteAddress(request, deps);
      const wait = throttle.blockedFor(remote);
      if (wait !== null) throw tooManyAttempts(wait);
      if (!adminKeyMatches(token, expected)) {
        throttle.failed(remote);
        deps.log.warn({ remote, url: request.url.split('?')[0] }, 'admin API request with a wrong admin key');
        throw invalidAdminKey('The admin key is not valid.');
      }
      throttle.succeeded(remote);
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
    if (isLoopbackAddress(remoteAddress(request, deps))) {
      if (namesThisMachine(request.headers.host)) return;
      // A loopback client that names another host: a page whose DNS name was rebound to 127.0.0.1 (see namesThisMachine).
      throw gatewayError(
        'admin_api_loopback_only',
        `The management API is open without an admin key only to clients on this machine that address it as localhost or a loopback address; this request named the host '${quoteInput(request.headers.host ?? '')}'. Set TOLLGATE_ADMIN_KEY to use another name.`,
      );
    }
    throw gatewayError('admin_api_loopback_only', 'The management API answers only clients on this machine because no admin key is configured. Set TOLLGATE_ADMIN_KEY to use it from elsewhere.');
  };
}
