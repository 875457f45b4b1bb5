import type { FastifyInstance } from 'fastify';
import { sendUnknownUrl } from '../render-error.js';
import { adminAuthHook } from './admin-auth.js';
import { AdminKeyThrottle } from './admin-key-throttle.js';
import { AdminSessions } from './admin-sessions.js';
import { registerSessionRoutes } from './session-routes.js';
import type { AdminDeps } from './admin-deps.js';
import { registerAlertRoutes } from './alert-routes.js';
import { registerAuditRoutes } from './audit-routes.js';
import { registerConfigRoutes } from './config-routes.js';
import { registerKeyRoutes } from './key-routes.js';
import { registerMcpAdminRoutes } from './mcp-routes.js';
import { registerLogRoutes } from './log-routes.js';
import { registerUsageRoutes } from './usage-routes.js';
import { registerCacheRoutes } from './cache-routes.js';
import { registerModelRoutes } from './model-routes.js';
import { registerProviderRoutes } from './provider-routes.js';
import { registerRouteRoutes } from './route-routes.js';
import { registerTeamRoutes } from './team-routes.js';

export type { AdminDeps } from './admin-deps.js';

/**
 * The management API under /api, in its own encapsulated plugin so the admin auth hook, the merge-patch
 * parser and the no-store header apply to /api only, never to the /v1 hot path.
 */
export function registerAdminRoutes(app: FastifyInstance, deps: AdminDeps): void {
  app.register(
    async (api) => {
      // Dashboard sign-ins of this server (in memory: a restart signs everyone out).
      const sessions = new AdminSessions();
      const throttle = new AdminKeyThrottle();
      api.addHook('onRequest', adminAuthHook(deps, sessions, throttle));
      // Responses describe live config (masked, but still operational detail): keep them out of caches.
      api.addHook('onSend', async (_request, reply, payload) => {
        reply.header('cache-control', 'no-store');
        return payload;
      });
      // Unknown /api paths get their 404 inside this plugin, after the auth hook, so they cannot be probed without the key.
      api.setNotFoundHandler(sendUnknownUrl);
      registerSessionRoutes(api, deps, sessions, throttle);
      registerConfigRoutes(api, deps);
      registerProviderRoutes(api, deps);
      registerRouteRoutes(api, deps);
      registerAuditRoutes(api, deps);
      registerKeyRoutes(api, deps);
      registerTeamRoutes(api, deps);
      registerLogRoutes(api, deps);
      registerUsageRoutes(api, deps);
      registerCacheRoutes(api, deps);
      registerModelRoutes(api, deps);
      registerAlertRoutes(api, deps);
      registerMcpAdminRoutes(api, deps);
    },
    { prefix: '/api' },
  );
}
