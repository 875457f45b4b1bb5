import type { McpServerRuntime, RouteRuntime } from '../core/config.js';
import { didYouMean } from '../core/did-you-mean.js';
import { allowsServer, entryServer } from '../core/mcp.js';
import { ConfigError } from './secret-ref.js';

/**
 * A route's `mcp.servers` and `mcp.allow` may name only MCP servers the config has (disabled ones included), as a
 * key's and a team's lists must when written through the admin API. A typo in `allow` silently matched no tool (the
 * route's requests were refused every MCP tool), and one in `servers` made every request of the route a 400: either
 * is refused when the config is loaded or changed (file or `PATCH /api/config`), naming the entry. A tool's name is
 * not checked: a server's tools are what it offers while it runs.
 */
export function checkRouteMcpNames(routes: ReadonlyMap<string, RouteRuntime>, servers: ReadonlyMap<string, McpServerRuntime>): void {
  const known = [...servers.keys()];
  const choices = known.length > 0 ? `the configured MCP servers are ${known.map((name) => `"${name}"`).join(', ')}` : 'no MCP server is configured';
  const refuse = (where: string, entry: string, server: string): never => {
    const near = didYouMean(server, known);
    const hint = near === null ? '' : ` (did you mean "${near + entry.slice(server.length)}"?)`;
    throw new ConfigError(`${where}: "${entry}" names the MCP server "${server}", which is not configured${hint}; ${choices}`);
  };
  for (const route of routes.values()) {
    route.mcp?.servers?.forEach((server, i) => {
      if (!servers.has(server)) refuse(`routes.${route.name}.mcp.servers.${i}`, server, server);
      // A server the route attaches but its own list refuses made every request of the route a 403.
      if (!allowsServer(route.mcp?.allow, server)) {
        throw new ConfigError(`routes.${route.name}.mcp.servers.${i}: "${server}" is a server the route's own mcp.allow does not allow, so every request would be refused; allow it or leave it out`);
      }
    });
    route.mcp?.allow?.forEach((entry, i) => {
      const server = entryServer(entry);
      if (!servers.has(server)) refuse(`routes.${route.name}.mcp.allow.${i}`, entry, server);
    });
  }
}
