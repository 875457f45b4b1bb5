/**
 * The gateway's connections to the configured MCP servers (one `McpConnection` each), reconfigured in place when the
 * config changes, and the one way tools are called: by namespaced name, with a timeout, the result capped, the call
 * measured and reported on the bus (`mcp.tool.called`, and `mcp.tool.failed` when it failed), and never a throw.
 */
import type { EventBus } from '../bus/bus.js';
import type { McpServerRuntime, McpSettings } from '../core/config.js';
import type { McpToolCall } from '../core/events.js';
import { MCP_TOOL_SEPARATOR, type McpCaller, type McpCallResult, type McpHub, type McpServerHealth, type McpToolInfo } from '../core/mcp.js';
import type { Log } from '../log.js';
import type { Outbound } from '../network/outbound-network.js';
import type { BackoffOptions, McpConnection } from './mcp-connection.js';
import { capResult, jsonBytes } from './mcp-result.js';
import { DEFAULT_MAX_ANSWER_BYTES, McpAnswerTooLarge } from './answer-limit.js';
import type { ToolResultGuard } from './result-guard.js';

/** Why a call failed: it ran past `call_timeout_ms`, its caller gave up, its server was not there, or the server or its answer failed. */
export type McpFailure = 'timeout' | 'cancelled' | 'unavailable' | 'failed';

/** A call's result as the hub gives it: `McpCallResult` and, when `status` is `error`, what kind of failure it was. */
export interface McpHubCallResult extends McpCallResult {
  failure: McpFailure | null;
  /** A guardrail blocked the result (see `McpCallOptions.guard`): the message the client gets, naming the rule. */
  blocked?: string;
}

export interface McpCallOptions {
  signal?: AbortSignal;
  /**
   * Checks a tool's answer before it is capped at max_result_bytes (a secret is seen whole, and what is cut is the
   * redacted text): the result given is the guard's; a blocked one is an `isError` result saying so.
   */
  guard?: ToolResultGuard | undefined;
}

/** The hub as the gateway's HTTP layer and admin API see it: `McpHub`, failures told apart, and stdio process ids. */
export interface McpHubView extends McpHub {
  callTool(name: string, args: Record<string, unknown>, caller: McpCaller, options?: McpCallOptions): Promise<McpHubCallResult>;
  /** A running stdio server's process id (null for HTTP servers and while none runs). */
  pid(server: string): number | null;
  /** Every configured server (disabled ones included), as configured, secrets read. */
  servers(): McpServerRuntime[];
}

export interface McpHubOptions {
  bus: EventBus;
  log: Log;
  /** How tollgate introduces itself to MCP servers. */
  clientInfo: { name: string; version: string };
  /** The gateway's way out: HTTP servers are reached through its dispatcher (proxy and CAs as configured). */
  outbound: Outbound;
  /** Reconnect delays (tests shorten them). */
  backoff?: BackoffOptions;
}

const NOT_CONFIGURED: Pick<McpSettings, 'callTimeoutMs' | 'maxResultBytes' | 'maxAnswerBytes'> = { callTimeoutMs: 30_000, maxResultBytes: 65_536, maxAnswerBytes: DEFAULT_MAX_ANSWER_BYTES };

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Splits `<server>__<tool>` at the first separator (server names have no `_`, tool names may). */
export function splitToolName(name: string): { server: string; tool: string } {
  const at = name.indexOf(MCP_TOOL_SEPARATOR);
  return at < 0 ? { server: '', tool: name } : { server: name.slice(0, at), tool: name.slice(at + MCP_TOOL_SEPARATOR.length) };
}

export class McpHubService implements McpHubView {
  private readonly connections = new Map<string, McpConnection>();
  private configured: McpServerRuntime[] = [];
  private limits = NOT_CONFIGURED;
  private closed = false;
  private applying: Promise<void> = Promise.resolve();

  constructor(private readonly options: McpHubOptions) {}

  /**
   * Applies a config version's `mcp` section: servers are compared by name and configuration (secrets included);
   * an unchanged server keeps its connection, a removed, changed or disabled one is closed, a new one connected.
   * Resolves once the closed connections are closed (new ones connect in the background).
   */
  reconfigure(settings: McpSettings): Promise<void> {
    // Changes apply in order: one waits for the connections the one before it closed.
    this.applying = this.applying.then(() => this.apply(settings));
    return this.applying;
  }

  private async apply(settings: McpSettings): Promise<void> {
    if (this.closed) return;
    this.limits = { callTimeoutMs: settings.callTimeoutMs, maxResultBytes: settings.maxResultBytes, maxAnswerBytes: settings.maxAnswerBytes };
    this.configured = [...settings.servers.values()];
    const wanted = new Map([...settings.servers].filter(([, server]) => server.disabled !== true));
    const closing: Promise<void>[] = [];
    for (const [name, connection] of this.connections) {
      const next = wanted.get(name);
      if (next && JSON.stringify(next) === JSON.stringify(connection.runtime)) continue;
      this.connections.delete(name);
      closing.push(connection.close());
    }
    await Promise.all(closing);
    if (this.closed || wanted.size === 0) return;
    // The MCP SDK's client side loads with the first configured server, not at start (most gateways have none).
    const { DEFAULT_BACKOFF, McpConnection } = await import('./mcp-connection.js');
    if (this.closed) return;
    for (const [name, runtime] of wanted) {
      if (this.connections.has(name)) continue;
      const connection = new McpConnection(runtime, { log: this.options.log, clientInfo: this.options.clientInfo, backoff: this.options.backoff ?? DEFAULT_BACKOFF, outbound: this.options.outbound, maxAnswerBytes: () => this.limits.maxAnswerBytes });
      this.connections.set(name, connection);
      connection.start();
    }
  }

  tools(servers?: readonly string[]): McpToolInfo[] {
    const only = servers ? new Set(servers) : null;
    return [...this.connections.values()].filter((connection) => !only || only.has(connection.name)).flatMap((connection) => connection.tools());
  }

  health(): McpServerHealth[] {
    return this.configured.map(
      (server) =>
        this.connections.get(server.name)?.health() ?? { name: server.name, type: server.type, state: 'closed', tools: 0, lastError: null, connectedAt: null, attempts: 0 },
    );
  }

  servers(): McpServerRuntime[] {
    return [...this.configured];
  }

  pid(server: string): number | null {
    return this.connections.get(server)?.pid() ?? null;
  }

  async callTool(name: string, args: Record<string, unknown>, caller: McpCaller, options: McpCallOptions = {}): Promise<McpHubCallResult> {
    const started = performance.now();
    const { server, tool } = splitToolName(name);
    const argumentsBytes = jsonBytes(args);
    const { callTimeoutMs, maxResultBytes } = this.limits;
    const connection = this.connections.get(server);
    // What the guard did to the answer (`output:<rule>:<action>`), reported with the call; null when it did nothing.
    let guardrails: string[] | null = null;
    const finish = (result: Omit<McpHubCallResult, 'durationMs' | 'argumentsBytes'>): McpHubCallResult => {
      const done: McpHubCallResult = { ...result, durationMs: Math.round(performance.now() - started), argumentsBytes };
      this.report(done, server, tool, caller, guardrails);
      return done;
    };
    const failed = (failure: McpFailure, raw: string): McpHubCallResult => {
      // What a server said (an error body, a JSON-RPC error) may hold the secrets it was configured with.
      const error = connection ? connection.redact(raw) : raw;
      const text = `Error: ${error}`;
      return finish({ status: 'error', isError: true, content: [{ type: 'text', text }], text, resultBytes: 0, truncated: false, error, failure });
    };
    if (!connection) return failed('failed', `no MCP server is configured for '${name}' (names are <server>${MCP_TOOL_SEPARATOR}<tool>)`);
    const { state, lastError } = connection.health();
    if (state !== 'ready') return failed('unavailable', `MCP server '${server}' is not connected (${state}${lastError ? `: ${lastError}` : ''})`);
    if (!connection.tools().some((candidate) => candidate.tool === tool)) return failed('failed', `MCP server '${server}' offers no tool '${tool}'`);
    if (options.signal?.aborted) return failed('cancelled', 'the tool call was cancelled before it started');
    try {
      const answer = await connection.callTool(tool, args, { timeoutMs: callTimeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
      const guarded = options.guard ? options.guard(answer.content, answer.structuredContent) : null;
      guardrails = guarded?.guardrails ?? null;
      if (guarded?.blocked) {
        const text = guarded.blocked;
        const resultBytes = jsonBytes(answer.content) + jsonBytes(answer.structuredContent);
        return finish({ status: 'ok', isError: true, content: [{ type: 'text', text }], text, resultBytes, truncated: false, error: null, failure: null, blocked: text });
      }
      const capped = guarded
        ? capResult(guarded.content, guarded.structuredContent, maxResultBytes)
        : capResult(answer.content, answer.structuredContent, maxResultBytes);
      return finish({ status: 'ok', isError: answer.isError, ...capped, error: null, failure: null });
    } catch (err) {
      // The SDK rejects an aborted call with a RequestTimeout error too: the caller's signal tells them apart.
      if (options.signal?.aborted) return failed('cancelled', 'the tool call was cancelled');
      if (err instanceof McpAnswerTooLarge) return failed('failed', `the tool '${name}' answered more than ${err.maxBytes} bytes (max_answer_bytes); its answer was not read`);
      // A connection exists, so its module (and the SDK) is loaded: this import only looks it up.
      const { mcpErrorKind } = await import('./mcp-connection.js');
      const kind = mcpErrorKind(err);
      if (kind === 'timeout') return failed('timeout', `the tool '${name}' did not answer within ${callTimeoutMs} ms`);
      if (kind === 'closed') return failed('unavailable', `the connection to MCP server '${server}' closed during the call`);
      if (kind === 'other') return failed('failed', `MCP server '${server}' answered an error: ${(err as Error).message}`);
      return failed(connection.health().state === 'ready' ? 'failed' : 'unavailable', errorMessage(err));
    }
  }

  /** Closes every connection (stdio servers' processes end); the hub serves no tools after. */
  async close(): Promise<void> {
    this.closed = true;
    await this.applying;
    const connections = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(connections.map((connection) => connection.close()));
  }

  private report(result: McpHubCallResult, server: string, tool: string, caller: McpCaller, guardrails: string[] | null): void {
    const { bus } = this.options;
    const payload: McpToolCall = {
      requestId: caller.requestId,
      keyId: caller.keyId,
      teamId: caller.teamId,
      server,
      tool,
      via: caller.via,
      durationMs: result.durationMs,
      status: result.status,
      isError: result.isError,
      argumentsBytes: result.argumentsBytes,
      resultBytes: result.resultBytes,
      truncated: result.truncated,
      guardrails,
    };
    bus.emit('mcp.tool.called', payload);
    if (result.status === 'error') {
      bus.emit('mcp.tool.failed', { ...payload, error: result.error ?? 'failed' });
      this.options.log.warn({ requestId: caller.requestId, server, tool, via: caller.via, err: result.error }, 'mcp tool call failed');
    }
  }
}
