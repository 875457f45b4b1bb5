import type { FastifyInstance } from 'fastify';
import type { McpServerConfig } from '../../core/config.js';
import type { McpToolInfo } from '../../core/mcp.js';
import { maskDocument, maskWebhookUrl } from '../../config/present.js';
import type { AdminDeps } from './admin-deps.js';
import { parsePageLimit } from './paging.js';
import { queryString } from './request-body.js';

/** A tool as the API shows it. */
function toolView(tool: McpToolInfo): Record<string, unknown> {
  return { name: tool.name, server: tool.server, tool: tool.tool, description: tool.description, input_schema: tool.inputSchema };
}

/** Each configured server: its connection's health, its stdio process id, and its config with every secret masked. */
function serverViews(deps: AdminDeps): Array<Record<string, unknown>> {
  const health = new Map(deps.mcp.health().map((entry) => [entry.name, entry]));
  const servers: Record<string, McpServerConfig> = {};
  for (const { name: _name, ...server } of deps.mcp.servers()) servers[_name] = server.type === 'http' ? { ...server, url: maskWebhookUrl(server.url) } : server;
  const masked = maskDocument({ mcp: { servers } }).mcp?.servers ?? {};
  return Object.entries(masked).map(([name, config]) => {
    const entry = health.get(name);
    return {
      name,
      type: config.type,
      state: entry?.state ?? 'closed',
      tools: entry?.tools ?? 0,
      last_error: entry?.lastError ?? null,
      connected_at: entry?.connectedAt ?? null,
      attempts: entry?.attempts ?? 0,
      pid: deps.mcp.pid(name),
      config,
    };
  });
}

/**
 * `/api/mcp`: the configured MCP servers (state, tools, last error, config with secrets masked) and the tools of the
 * ready ones; `/api/mcp/tools` (`?server=` for one server's). Servers are configured in the `mcp` config section.
 */
export function registerMcpAdminRoutes(api: FastifyInstance, deps: AdminDeps): void {
  api.get('/mcp', async () => ({ servers: serverViews(deps), tools: deps.mcp.tools().map(toolView) }));
  // Every tool call, newest first: who, which tool, through which door, how long, how it went (never the content).
  api.get('/mcp/calls', async (request) => ({
    object: 'list',
    data: deps.mcpCalls.list({ limit: parsePageLimit(queryString(request, 'limit'), 1_000), keyId: queryString(request, 'key_id'), server: queryString(request, 'server') }),
  }));
  api.get('/mcp/tools', async (request) => {
    const server = queryString(request, 'server');
    return { tools: deps.mcp.tools(server ? [server] : undefined).map(toolView) };
  });
}
