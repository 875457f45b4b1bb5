import type { FastifyInstance, FastifyRequest } from 'fastify';
import { normalizeAddress } from '../../config/address.js';
import { gatewayError } from '../../core/errors.js';
import { isRecord } from '../../core/is-record.js';
import { adminKeyMatches, expectedAdminKey, invalidAdminKey, remoteAddress, tooManyAttempts } from './admin-auth.js';
import type { AdminKeyThrottle } from './admin-key-throttle.js';
import type { AdminDeps } from './admin-deps.js';
import { SESSION_COOKIE, SESSION_TTL_MS, sessionToken, type AdminSessions } from './admin-sessions.js';

/**
 * The session cookie: httpOnly (no script reads it), SameSite=Strict (no other site sends it), /api only, and Secure
 * when the browser reached the gateway over https (a TLS-terminating proxy named in `trusted_proxies` says so in
 * X-Forwarded-Proto or Forwarded), so it is never sent over plain http after that.
 */
function cookie(request: FastifyRequest, deps: Pick<AdminDeps, 'configService'>, value: string, maxAgeSeconds: number): string {
  const secure = overHttps(request, deps.configService.current().settings.trustedProxies) ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/api; Max-Age=${maxAgeSeconds}${secure}`;
}

/** Whether the client's connection is https: this socket's, or the one a trusted proxy terminated. */
function overHttps(request: FastifyRequest, trustedProxies: ReadonlySet<string>): boolean {
  if (request.protocol === 'https') return true;
  if (!trustedProxies.has(normalizeAddress(request.socket.remoteAddress ?? ''))) return false;
  const forwardedProto = request.headers['x-forwarded-proto'];
  const proto = (Array.isArray(forwardedProto) ? forwardedProto[0] : forwardedProto)?.split(',')[0]?.trim().toLowerCase();
  if (proto !== undefined) return proto === 'https';
  const forwarded = request.headers.forwarded;
  return typeof forwarded === 'string' && /(?:^|[;,\s])proto="?https"?(?:[;,\s]|$)/i.test(forwarded.split(',')[0] ?? '');
}

/**
 * Signing in to the dashboard when `TOLLGATE_ADMIN_KEY` is set: `POST /api/session` with `{"admin_key": ...}`
 * answers with a session cookie, `DELETE /api/session` ends it, `GET /api/session` says whether the admin key is
 * required and whether this browser is signed in. Without an admin key the API follows its loopback rule and
 * there is nothing to sign in to.
 */
export function registerSessionRoutes(api: FastifyInstance, deps: AdminDeps, sessions: AdminSessions, throttle: AdminKeyThrottle): void {
  const expected = expectedAdminKey(deps.adminKey);

  api.get('/session', async (request) => {
    const token = sessionToken(request.headers.cookie);
    return { admin_key_required: expected !== null, signed_in: expected !== null && token !== null && sessions.valid(token) };
  });

  api.post('/session', async (request, reply) => {
    if (!expected) {
      throw gatewayError('invalid_request', 'No admin key is configured: the management API answers clients on this machine without signing in.');
    }
    const body = request.body;
    const presented = isRecord(body) && typeof body.admin_key === 'string' ? body.admin_key : null;
    if (presented === null) throw gatewayError('missing_required_parameter', "Missing required parameter: 'admin_key'.", { param: 'admin_key' });
    const remote = remoteAddress(request, deps);
    const wait = throttle.blockedFor(remote);
    if (wait !== null) throw tooManyAttempts(wait);
    if (!adminKeyMatches(presented, expected)) {
      throttle.failed(remote);
      deps.log.warn({ url: '/api/session', remote }, 'dashboard sign-in with a wrong admin key');
      throw invalidAdminKey('The admin key is not valid.');
    }
    throttle.succeeded(remote);
    const session = sessions.create();
    reply.header('set-cookie', cookie(request, deps, session.token, Math.floor(SESSION_TTL_MS / 1000)));
    return { signed_in: true, expires_at: new Date(session.expiresAt).toISOString() };
  });

  api.delete('/session', async (request, reply) => {
    const token = sessionToken(request.headers.cookie);
    if (token !== null) sessions.revoke(token);
    reply.header('set-cookie', cookie(request, deps, '', 0));
    return { signed_in: false };
  });
}
