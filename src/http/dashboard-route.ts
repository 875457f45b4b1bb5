import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** Where `npm run build:dashboard` writes the web UI (dashboard/dist, never committed). */
export const DEFAULT_DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/dist/', import.meta.url));

/**
 * Said at `/` when the dashboard has not been built (a package installed without dev dependencies, or a clone
 * started with `node src/main.ts` instead of `npm start`): the API works regardless, so this is not an error.
 */
const NOT_BUILT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tollgate</title><link rel="icon" href="data:,"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 3rem auto; line-height: 1.5">
<h1>tollgate is running; the dashboard is not built</h1>
<p>The API (<code>/v1</code>, <code>/api</code>, <code>/health</code>, <code>/metrics</code>) works. To get the web dashboard here,
build it from the repository and reload this page (no restart needed):</p>
<pre>npm install
npm run build:dashboard</pre>
<p><code>npm start</code> builds it by itself when it is missing or out of date.</p>
</body></html>
`;

/**
 * Headers of every dashboard answer. The dashboard drives the management API with the browser's standing (the
 * session cookie, or a loopback browser's open access), so a page of another site must not frame it and trick a
 * click on Delete, Rotate or Save (clickjacking): `frame-ancestors 'none'`, and X-Frame-Options for browsers that
 * predate it. It also shows what clients sent (model names, users, metadata, captured bodies): were an escape ever
 * missed, the policy still lets only the dashboard's own bundles run and talk only to this gateway (no inline or
 * injected script, no eval, no request elsewhere, no form posted away, no `<base>` moving relative URLs). nosniff
 * keeps a file from being run as anything but its declared type.
 */
const DASHBOARD_HEADERS = {
  'content-security-policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    // The page's empty icon is a data: URL.
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
} as const;

/** The page said when the dashboard is not built: its one inline style, and nothing else. */
const NOT_BUILT_HEADERS = {
  ...DASHBOARD_HEADERS,
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
} as const;

/**
 * Serves the built dashboard: `GET /` answers index.html and `/assets/*` the hashed bundles. The dashboard routes
 * in the browser (`/#/logs`), so no other path is claimed and `/v1`, `/api`, `/health`, ... and unknown URLs
 * keep their own answers. index.html is read on each request so a rebuild shows without a restart.
 */
export function registerDashboardRoutes(app: FastifyInstance, dashboardDir: string): void {
  app.get('/', async (_request, reply) => {
    reply.headers(DASHBOARD_HEADERS);
    let page: string;
    try {
      page = await readFile(join(dashboardDir, 'index.html'), 'utf8');
    } catch {
      return reply.code(503).headers(NOT_BUILT_HEADERS).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(NOT_BUILT_PAGE);
    }
    // index.html names the hashed bundles of the current build, so it must never be cached.
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-cache').send(page);
  });

  // Bundle names carry a content hash: a file never changes under its name, so browsers may keep it.
  void app.register(fastifyStatic, {
    root: join(dashboardDir, 'assets'),
    prefix: '/assets/',
    decorateReply: false,
    wildcard: true,
    index: false,
    immutable: true,
    maxAge: '365d',
    setHeaders: (reply) => {
      reply.headers(DASHBOARD_HEADERS);
    },
  });
}
