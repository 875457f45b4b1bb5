import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The APIs a web app may call from another origin: the model routes (and MCP, which browser-based MCP clients
 * use), as OpenAI's, Anthropic's and Google's own APIs allow. Not the management API (/api, the dashboard's, which
 * refuses cross-site calls), /metrics or the dashboard's files.
 */
const CROSS_ORIGIN_PREFIXES = ['/v1/', '/anthropic/', '/genai/', '/litellm/', '/chat/', '/embeddings', '/models', '/mcp'];

function allowsCrossOrigin(path: string): boolean {
  for (const prefix of CROSS_ORIGIN_PREFIXES) if (path.startsWith(prefix)) return true;
  return false;
}

/** How long a browser may keep a preflight's answer (Chromium keeps at most 2 hours). */
const PREFLIGHT_MAX_AGE = '7200';

/**
 * CORS for a request that carries an `Origin` (browsers send it; server-side SDKs do not, so this is never on their
 * way). Any origin is allowed: the credential is a header the page must hold (a virtual key), never a cookie, so the
 * answer is `*`, which browsers never combine with cookies. Without a key, a page of another site is no local client
 * (isRemoteClient), so it cannot use the loopback access of zero config. Answers a preflight itself (returns true);
 * otherwise sets the headers on the raw response, where every answer (fastify's, or one a route writes itself)
 * picks them up.
 */
export function answerCrossOrigin(request: FastifyRequest, reply: FastifyReply): boolean {
  const path = request.url.split('?')[0] ?? '';
  if (!allowsCrossOrigin(path)) return false;
  const res = reply.raw;
  const preflight = request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined;
  if (!preflight) {
    res.setHeader('access-control-allow-origin', '*');
    // The request id, rate-limit and provider headers, readable by the page's SDK.
    res.setHeader('access-control-expose-headers', '*');
    return false;
  }
  const headers: Record<string, string> = {
    'access-control-allow-origin': '*',
    'access-control-allow-methods': 'GET, POST, DELETE',
    'access-control-max-age': PREFLIGHT_MAX_AGE,
    'x-request-id': request.id,
  };
  const asked = request.headers['access-control-request-headers'];
  if (typeof asked === 'string' && asked !== '') headers['access-control-allow-headers'] = asked;
  // Chromium's Private Network Access: a public site's page asks before calling a gateway on a private address.
  if (request.headers['access-control-request-private-network'] === 'true') headers['access-control-allow-private-network'] = 'true';
  reply.hijack();
  res.writeHead(204, headers);
  res.end();
  return true;
}
