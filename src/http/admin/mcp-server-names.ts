import type { RuntimeConfig } from '../../core/config.js';
import { gatewayError } from '../../core/errors.js';
import { quoteInput } from '../../core/quote-input.js';
import { isRecord } from '../../core/is-record.js';

/** What a message about an MCP server name offers instead: the configured servers, or that there are none. */
export function mcpServerChoices(configured: ReadonlyMap<string, unknown>): string {
  return configured.size > 0 ? `the configured MCP servers are ${[...configured.keys()].map((n) => `'${n}'`).join(', ')}` : 'no MCP server is configured';
}

/**
 * A key's or team's `mcp.servers` may name only MCP servers the running config has: a request of a key naming one
 * it lacks was refused at every chat call (unknown MCP server), so a typo is a 400 naming it when written instead.
 * Checked when the list is written, as `plugins` are; a server the config later drops leaves stored lists as they
 * are. `mcp.allow` is checked the same way (allow-list-names.ts); an empty `allow` is how a key is allowed no tool.
 */
export function checkMcpServerNames(body: unknown, config: RuntimeConfig): void {
  if (!isRecord(body) || !isRecord(body.mcp) || !Array.isArray(body.mcp.servers)) return;
  const configured = config.mcp.servers;
  body.mcp.servers.forEach((name: unknown, index) => {
    // Not a string: the schema's own message.
    if (typeof name !== 'string' || configured.has(name)) return;
    throw gatewayError('invalid_value', `Invalid 'mcp.servers.${index}': '${quoteInput(name, 64)}' is not a configured MCP server (${mcpServerChoices(configured)}).`, {
      param: `mcp.servers.${index}`,
    });
  });
}
