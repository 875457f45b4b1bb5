import { createHash } from 'node:crypto';
import type { McpPolicyConfig } from '../core/config.js';
import { gatewayError, type GatewayError } from '../core/errors.js';
import type { Identity } from '../core/context.js';
import { allowsServer, MCP_TOOL_SEPARATOR, type McpCaller, type McpHub, type McpToolInfo } from '../core/mcp.js';
import type { SlidingWindowLimiter } from '../governance/rate-limiter.js';

/** Whether one allow-list (`server`, `server__tool`, `server__*`) lets `<server>__<tool>` through; absent: everything. */
export function allows(allow: readonly string[] | undefined, tool: Pick<McpToolInfo, 'server' | 'name'>): boolean {
  if (!allow) return true;
  return allow.some((entry) => entry === tool.server || entry === tool.name || entry === `${tool.server}${MCP_TOOL_SEPARATOR}*`);
}

/**
 * The allow-lists a request is under: its team's, its key's and, for a chat request, its route's (`routeAllow`). A
 * tool must pass every one of them: the team's list is the ceiling of its keys' lists (a key never gets a tool its
 * team does not allow, whatever the key's own list says), and a route's list narrows what its requests may use.
 */
function allowLists(identity: Identity | null, routeAllow?: readonly string[]): Array<readonly string[] | undefined> {
  return [identity?.team?.mcp?.allow, identity?.key.mcp?.allow, routeAllow];
}

/** Whether the caller (a virtual key with its team, or an anonymous caller) may use this tool (on this route). */
export function mayUse(identity: Identity | null, tool: Pick<McpToolInfo, 'server' | 'name'>, routeAllow?: readonly string[]): boolean {
  return allowLists(identity, routeAllow).every((allow) => allows(allow, tool));
}

/**
 * Whether the caller may ask for a server's tools at all: each of its allow-lists names the server, its pattern or
 * one of its tools. Read from the lists alone, not from the tools the server offers now: a server that is down or
 * reconnecting offers none, and a key allowed one of its tools is no more refused then than a key allowed all.
 */
export function mayAskFor(identity: Identity | null, server: string, routeAllow?: readonly string[]): boolean {
  return allowLists(identity, routeAllow).every((allow) => allowsServer(allow, server));
}


/** Every tool of the ready servers the caller may use (of these servers only, when named; on this route). */
export function toolsFor(hub: McpHub, identity: Identity | null, servers?: readonly string[], routeAllow?: readonly string[]): McpToolInfo[] {
  return hub.tools(servers).filter((tool) => mayUse(identity, tool, routeAllow));
}

/** The mode a request runs in: the header's, else the key's, the team's, the route's, else `client`. */
export function modeOf(header: string | undefined, layers: ReadonlyArray<McpPolicyConfig | null | undefined>): 'client' | 'auto' {
  if (header === 'auto' || header === 'client') return header;
  for (const layer of [...layers].reverse()) if (layer?.mode) return layer.mode;
  return 'client';
}

/**
 * Takes one tool call from the caller's per-minute budgets (key and team `tool_calls_per_minute`): null when
 * allowed, else the 429 to give (a tool result error in agent mode, an HTTP error elsewhere).
 */
export function takeToolCall(limiter: SlidingWindowLimiter, identity: Identity | null): GatewayError | null {
  if (!identity) return null;
  const entries: Array<{ key: string; limit: number }> = [];
  const keyLimit = identity.key.mcp?.tool_calls_per_minute;
  const teamLimit = identity.team?.mcp?.tool_calls_per_minute;
  if (keyLimit) entries.push({ key: `mcp:key:${identity.key.id}`, limit: keyLimit });
  if (teamLimit && identity.team) entries.push({ key: `mcp:team:${identity.team.id}`, limit: teamLimit });
  if (entries.length === 0) return null;
  const taken = limiter.tryTakeAll(entries);
  if (taken.allowed) return null;
  const blocked = entries[taken.blocked] ?? entries[0];
  const state = taken.states[taken.blocked];
  const seconds = Math.max(1, Math.ceil((state?.resetMs ?? 60_000) / 1000));
  return gatewayError('rate_limit_exceeded', `MCP tool call rate limit reached: ${blocked?.limit} calls per minute. Try again in ${seconds} s.`, {
    type: 'requests',
    headers: { 'retry-after': String(seconds) },
  });
}

/**
 * The names every model API takes for a function: OpenAI's and Anthropic's characters (no `.` or `/`), Gemini's
 * first character, 64 at most (OpenAI's and Gemini's limit).
 */
const MODEL_TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;

/**
 * The name a model sees a tool under. MCP tool names may hold `.` and `/` and run to 128 characters, which OpenAI
 * and Anthropic refuse (a 400 for the whole request): such a name keeps its legal characters (others become `_`),
 * cut to fit, and ends with a hash of the real name, so it stays distinct and always maps back to one tool.
 */
export function modelToolName(name: string): string {
  if (MODEL_TOOL_NAME.test(name)) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  const safe = name.replace(/[^A-Za-z0-9_-]/g, '_');
  return `${/^[A-Za-z_]/.test(safe) ? '' : '_'}${safe}`.slice(0, 64 - 1 - hash.length) + `_${hash}`;
}

/** The tool of a ready server by its name, or by the name a model sees it under (see modelToolName). */
export function findTool(hub: McpHub, name: string): McpToolInfo | undefined {
  const tools = hub.tools();
  return tools.find((candidate) => candidate.name === name) ?? tools.find((candidate) => modelToolName(candidate.name) === name);
}

/** The refusal of a tool the caller may not use, or that no ready server offers. */
export function toolRefusal(hub: McpHub, identity: Identity | null, name: string): GatewayError | null {
  const tool = findTool(hub, name);
  const notAllowed = (): GatewayError => gatewayError('mcp_tool_not_allowed', `This key may not use the MCP tool '${name}'.`, { param: 'name' });
  if (!tool) {
    // A name the caller's allow-lists refuse is refused the same whether a server offers it or not: a key limited to
    // some servers or tools cannot probe which others exist (404 against 403 would tell it).
    const separator = name.indexOf(MCP_TOOL_SEPARATOR);
    if (!mayUse(identity, { server: separator > 0 ? name.slice(0, separator) : name, name })) return notAllowed();
    return gatewayError('mcp_tool_not_found', `No MCP tool named '${name}' on a connected server (names are <server>__<tool>).`, { param: 'name' });
  }
  if (!mayUse(identity, tool)) return notAllowed();
  return null;
}

/** Who calls a tool, as the hub reports it: the request, the key and team (null for an anonymous caller), the door. */
export function callerOf(requestId: string, identity: Identity | null, via: McpCaller['via']): McpCaller {
  return { requestId, keyId: identity?.key.id ?? null, teamId: identity?.team?.id ?? null, via };
}
