import { api, ApiError, request } from './client.js';
import type { FieldSpec } from './fields.js';

/**
 * What the MCP page and a key's MCP editor read and write (README "MCP"): the servers and tools of `GET /api/mcp`,
 * the tool-call log of `GET /api/mcp/calls`, the `mcp` section of the config (written with one `PATCH /api/config`
 * merge patch per change), and a key's `mcp` policy. In one place, the fields each server type has, so the form and
 * the table follow them (a field renamed or added is one line here).
 */

export type McpServerType = 'stdio' | 'http';
export type McpServerState = 'connecting' | 'ready' | 'failed' | 'reconnecting' | 'closed';

/** A server's config as the API shows it: the token, header values and env values masked (`****abcd`). */
export interface McpServerConfig {
  type: McpServerType | string;
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  token?: string;
  disabled?: boolean;
  [field: string]: unknown;
}

export interface McpServerView {
  name: string;
  type: McpServerType | string;
  state: McpServerState | string;
  tools: number;
  last_error: string | null;
  connected_at: string | null;
  attempts: number;
  /** A stdio server's process id (null for HTTP, or while it is not running). */
  pid: number | null;
  config: McpServerConfig;
}

export interface McpToolView {
  /** `<server>__<tool>`. */
  name: string;
  server: string;
  tool: string;
  description?: string | null;
  input_schema?: { properties?: Record<string, unknown>; required?: string[] } | null;
}

export interface McpView {
  servers: McpServerView[];
  tools: McpToolView[];
}

/** One tool call of the call log, newest first. */
export interface McpCall {
  at: string;
  requestId: string | null;
  keyId: string | null;
  teamId: string | null;
  server: string;
  tool: string;
  via: 'agent' | 'api' | 'mcp' | string;
  status: 'ok' | 'error' | string;
  isError: boolean;
  durationMs: number;
  argumentsBytes: number;
  resultBytes: number;
  truncated: boolean;
  /** What the output guardrails did to a direct call's result (`output:<rule>:<action>`); null when none acted. */
  guardrails?: string[] | null;
  error: string | null;
}

/** A key's (or team's) MCP policy. */
export interface McpPolicy {
  servers?: string[];
  allow?: string[];
  mode?: 'client' | 'auto';
  tool_calls_per_minute?: number;
}

/** Where the servers come from: the API layer's `mcp` section replaces the file's as a whole. */
export type McpSource = 'api' | 'file' | 'none';

export interface McpState {
  view: McpView;
  source: McpSource;
  /** The API layer's servers (masked), what a change is a merge patch against; empty unless `source` is api. */
  apiServers: Record<string, McpServerConfig>;
}

export const SERVER_NAME = /^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/;

/** The servers, their tools, and where the section comes from. */
export async function loadMcp(signal?: AbortSignal): Promise<McpState> {
  const [view, apiLayer] = await Promise.all([api.get<McpView>('/mcp', {}, signal), api.get<{ mcp?: { servers?: Record<string, McpServerConfig> } }>('/config', { layer: 'api' }, signal)]);
  const source: McpSource = apiLayer.mcp ? 'api' : view.servers.length ? 'file' : 'none';
  return { view, source, apiServers: apiLayer.mcp?.servers ?? {} };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The RFC 7396 merge patch that turns `before` into `after`: a field gone is `null`, objects are diffed field by field. */
export function mergeDiff(before: unknown, after: unknown): unknown {
  if (!isObject(before) || !isObject(after)) return after;
  const patch: Record<string, unknown> = {};
  for (const key of Object.keys(before)) if (after[key] === undefined) patch[key] = null;
  for (const [key, value] of Object.entries(after)) {
    if (value === undefined) continue;
    const old = before[key];
    if (isObject(value) && isObject(old)) {
      const inner = mergeDiff(old, value) as Record<string, unknown>;
      if (Object.keys(inner).length) patch[key] = inner;
    } else if (JSON.stringify(value) !== JSON.stringify(old)) patch[key] = value;
  }
  return patch;
}

/** One `PATCH /api/config` (a JSON merge patch); the API's `{error: {param}}` comes back as an ApiError. */
async function patchConfig(body: unknown): Promise<void> {
  await request('PATCH', '/api/config', body, { headers: { 'content-type': 'application/merge-patch+json' } });
}

/**
 * Adds or changes one server (`config` null removes it), as one merge patch of the config's `mcp.servers`. When the
 * API layer has no `mcp` section yet, the file's servers in force (as `/api/mcp` shows them, secrets masked: the API
 * restores them) go with it, since the API's section replaces the file's as a whole.
 */
export async function saveServer(state: McpState, name: string, config: McpServerConfig | null): Promise<void> {
  if (state.source === 'api') {
    const stored = state.apiServers[name];
    await patchConfig({ mcp: { servers: { [name]: config === null ? null : stored ? mergeDiff(stored, config) : config } } });
    return;
  }
  const servers: Record<string, McpServerConfig> = {};
  for (const server of state.view.servers) if (server.name !== name) servers[server.name] = server.config;
  if (config) servers[name] = config;
  await patchConfig({ mcp: { servers } });
}

/** The API's section dropped: the config file's (if any) applies again. */
export function revertMcp(): Promise<void> {
  return patchConfig({ mcp: null });
}

/** A policy as the API takes it: null when it sets nothing. */
export function policyBody(policy: McpPolicy): McpPolicy | null {
  const body: McpPolicy = {};
  if (policy.servers?.length) body.servers = policy.servers;
  if (policy.allow?.length) body.allow = policy.allow;
  if (policy.mode) body.mode = policy.mode;
  if (policy.tool_calls_per_minute !== undefined) body.tool_calls_per_minute = policy.tool_calls_per_minute;
  return Object.keys(body).length ? body : null;
}

// ---- the fields of each server type ------------------------------------------------------------------------------

export const SERVER_TYPES: Record<McpServerType, { label: string; fields: FieldSpec[] }> = {
  stdio: {
    label: 'Command (stdio)',
    fields: [
      { name: 'command', label: 'Command', kind: 'text', required: true, hint: 'the program tollgate starts and speaks MCP with over stdin/stdout, e.g. npx' },
      { name: 'args', label: 'Arguments', kind: 'lines', hint: 'one a line' },
      { name: 'env', label: 'Environment', kind: 'env', hint: 'one `NAME=value` a line; values are secrets, shown masked (send a masked one back to keep it)' },
      { name: 'cwd', label: 'Working directory', kind: 'text', hint: "default: the gateway's" },
    ],
  },
  http: {
    label: 'Streamable HTTP',
    fields: [
      { name: 'url', label: 'URL', kind: 'url', required: true, hint: 'the streamable HTTP endpoint, e.g. https://mcp.example.com/mcp' },
      { name: 'headers', label: 'Headers', kind: 'headers', hint: 'one `Name: value` a line; values are secrets, shown masked (send a masked one back to keep it)' },
      { name: 'token', label: 'Bearer token', kind: 'secret', hint: 'sent as Authorization: Bearer <token>' },
    ],
  },
};

export const DISABLED_FIELD: FieldSpec = { name: 'disabled', label: 'Disabled', kind: 'flag', hint: 'configured, not started' };

/**
 * The API names a field by its config path (`mcp.servers.docs.url`); the form about server `docs` names it `url`.
 * Anything else keeps its param (the form shows it at its top).
 */
export function serverError(error: ApiError, name: string): ApiError {
  const prefix = `mcp.servers.${name}.`;
  if (error.param?.startsWith(prefix)) return new ApiError(error.status, error.message, error.param.slice(prefix.length), error.code);
  return error;
}

// ---- words -------------------------------------------------------------------------------------------------------

/** Where a server is, as the API shows it (secrets masked): `node server.mjs --flag` or the URL, plus its secrets. */
export function destination(config: McpServerConfig): { where: string; extra: string[] } {
  const extra: string[] = [];
  if (config.type === 'stdio') {
    const where = [config.command ?? '', ...(config.args ?? [])].filter(Boolean).join(' ');
    if (config.cwd) extra.push(`in ${config.cwd}`);
    if (config.env) extra.push(...Object.entries(config.env).map(([name, value]) => `${name}=${value}`));
    return { where, extra };
  }
  if (config.token) extra.push(`token ${config.token}`);
  if (config.headers) extra.push(...Object.entries(config.headers).map(([name, value]) => `${name}: ${value}`));
  return { where: config.url ?? '—', extra };
}

/** The argument names of a tool (`path*` when required), from its input schema's properties. */
export function argumentNames(tool: McpToolView): string[] {
  const properties = tool.input_schema?.properties;
  if (!properties || typeof properties !== 'object') return [];
  const required = Array.isArray(tool.input_schema?.required) ? tool.input_schema.required : [];
  return Object.keys(properties).map((name) => (required.includes(name) ? `${name}*` : name));
}

/** 1234 -> "1.2 kB". */
export function bytes(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  if (value < 1000) return `${value} B`;
  if (value < 1_000_000) return `${(value / 1000).toFixed(1)} kB`;
  return `${(value / 1_000_000).toFixed(1)} MB`;
}
