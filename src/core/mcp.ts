/**
 * The MCP vocabulary shared by the hub (connections to MCP servers), the `mcp` stage (tools for models), and the
 * HTTP layer (`/mcp`, `/v1/mcp/tools/call`, `/api/mcp`). Tool names are namespaced `<server>__<tool>`.
 */

/** The separator between a server's name and its tool's in a namespaced tool name. */
export const MCP_TOOL_SEPARATOR = '__';

/**
 * The MCP server an allow-list entry (`server`, `server__tool`, `server__*`) names: what stands before its first
 * separator, or the whole entry when it has none (or starts with one).
 */
export function entryServer(entry: string): string {
  const separator = entry.indexOf(MCP_TOOL_SEPARATOR);
  return separator > 0 ? entry.slice(0, separator) : entry;
}

/**
 * Whether one allow-list (`mcp.allow` of a key, team or route) lets a request ask for a server: it names the server,
 * its pattern or one of its tools; no list: yes. Shared by the mcp stage and the config's check of routes.
 */
export function allowsServer(allow: readonly string[] | undefined, server: string): boolean {
  const prefix = `${server}${MCP_TOOL_SEPARATOR}`;
  return !allow || allow.some((entry) => entry === server || entry.startsWith(prefix));
}

/** One tool of one connected MCP server, as a model and an MCP client see it. */
export interface McpToolInfo {
  server: string;
  /** The tool's own name on its server. */
  tool: string;
  /** `<server>__<tool>`: the name models and MCP clients use. */
  name: string;
  description: string;
  /** The tool's JSON Schema for its arguments, as the server gave it. */
  inputSchema: Record<string, unknown>;
  /** The tool's display name, when the server gave one (passed on to MCP clients, as the two below). */
  title?: string;
  /** Hints (`readOnlyHint`, `destructiveHint`): MCP clients ask before running a tool that may change things. */
  annotations?: Record<string, unknown>;
  /** The JSON Schema of the tool's structured result. */
  outputSchema?: Record<string, unknown>;
}

/** What a tool call gave: the server's content blocks, their text for a model, and how it went. */
export interface McpCallResult {
  /** `ok`: the tool answered (it may still report `isError`); `error`: it failed, hung or could not be reached. */
  status: 'ok' | 'error';
  /** The tool said its own call failed (MCP `isError`). */
  isError: boolean;
  /** MCP content blocks as the server answered them (size-capped). */
  content: unknown[];
  /** The structured result, when the server gave one. */
  structuredContent?: Record<string, unknown>;
  /** The result as one text for a model's tool message (size-capped). */
  text: string;
  durationMs: number;
  argumentsBytes: number;
  resultBytes: number;
  truncated: boolean;
  /** Why it failed (`status: error`): a timeout, a closed connection, an unknown tool. */
  error: string | null;
}

export type McpServerState = 'connecting' | 'ready' | 'reconnecting' | 'failed' | 'closed';

export interface McpServerHealth {
  name: string;
  type: 'stdio' | 'http';
  state: McpServerState;
  tools: number;
  lastError: string | null;
  /** When the current connection was made (ISO), or null. */
  connectedAt: string | null;
  /** Connection attempts since the last success. */
  attempts: number;
}

/** Who is calling a tool, for governance, logs and events. */
export interface McpCaller {
  requestId: string;
  keyId: string | null;
  teamId: string | null;
  /** Where the call came from: a model's tool call in agent mode, the tools/call endpoint, or an MCP client. */
  via: 'agent' | 'api' | 'mcp';
}

/** The gateway's connections to the configured MCP servers. */
export interface McpHub {
  /** Tools of the ready servers (of these servers only, when named). */
  tools(servers?: readonly string[]): McpToolInfo[];
  /** Calls `<server>__<tool>`; never throws: a failure, a timeout or an unknown tool is a `status: error` result. */
  callTool(name: string, args: Record<string, unknown>, caller: McpCaller, options?: { signal?: AbortSignal }): Promise<McpCallResult>;
  health(): McpServerHealth[];
}

/** The default `mcp.max_answer_bytes`: the MCP SDK's own limit on a stdio server's message (10 MiB). */
export const DEFAULT_MCP_MAX_ANSWER_BYTES = 10 * 1024 * 1024;
