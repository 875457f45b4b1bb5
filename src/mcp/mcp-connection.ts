/**
 * One configured MCP server: the SDK client connected over stdio (a child process tollgate starts) or streamable
 * HTTP, its tool list (every page, refreshed on `notifications/tools/list_changed`), and reconnection with capped,
 * jittered exponential backoff whenever the connection closes or an attempt fails.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolResultSchema, ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { McpServerRuntime } from '../core/config.js';
import { REDACTED, redactSecrets } from '../core/redact-secrets.js';
import { MCP_TOOL_SEPARATOR, type McpServerHealth, type McpServerState, type McpToolInfo } from '../core/mcp.js';
import { isRecord } from '../core/is-record.js';
import { argSecrets } from '../core/mcp-arg-secrets.js';
import type { Log } from '../log.js';
import type { Outbound } from '../network/outbound-network.js';
import { fetch as undiciFetch } from 'undici';
import { DEFAULT_MAX_ANSWER_BYTES, limitAnswer, McpAnswerTooLarge } from './answer-limit.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';

/** How long to wait before reconnecting: `baseMs` doubled per failed attempt up to `maxMs`, each with jitter. */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 500, maxMs: 30_000 };

/** Longest the MCP handshake and a tool list page may take before the attempt counts as failed. */
const CONNECT_TIMEOUT_MS = 15_000;
/** Most tool list pages read from one server (a server that pages for ever is cut off there). */
const MAX_TOOL_PAGES = 100;
/** Longest a closing connection waits for an HTTP server to end its session. */
const SESSION_END_MS = 2_000;
/** The last stderr output of a stdio server kept for `lastError` when it exits. */
const STDERR_TAIL_CHARS = 2_000;

/**
 * The signal that ends the HTTP request of the tool call being sent (see transportFor). A stateless HTTP server
 * serves each request on its own POST: the `notifications/cancelled` for a call given up on reaches another server
 * there, and only the end of the call's own request tells the server to stop (and frees the connection).
 */
const callRequest = new AsyncLocalStorage<{ signal: AbortSignal; fail(err: Error): void }>();
/** The body of a tools/call request as the SDK writes it (JSON.stringify, no spaces). */
const TOOLS_CALL = '"method":"tools/call"';

/** The delay before reconnect attempt `attempt` (1-based): exponential, capped, with jitter in [half, full]. */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const full = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(full / 2 + random() * (full / 2));
}

export interface ToolAnswer {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
}

export interface ConnectionDeps {
  log: Log;
  clientInfo: { name: string; version: string };
  backoff: BackoffOptions;
  outbound: Outbound;
  /** The config's `mcp.max_answer_bytes`, for a server without its own (read per call: a change applies at once). */
  maxAnswerBytes?: () => number;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Configured values shorter than this are not looked for in error texts (a short one would match ordinary words). */
const SHORTEST_SECRET = 6;

/**
 * The secrets of a server's config, which `GET /api/mcp` shows masked: a stdio server's `env` values and the
 * credentials in its arguments (see mcp-arg-secrets.ts), an HTTP server's token, header values, and the URL's user,
 * password and query values. Longest first, so a secret that contains another is replaced whole.
 */
function configuredSecrets(runtime: McpServerRuntime): string[] {
  const values: string[] = [];
  if (runtime.type === 'stdio') values.push(...Object.values(runtime.env ?? {}), ...argSecrets(runtime.args ?? []));
  else {
    if (runtime.token) values.push(runtime.token);
    values.push(...Object.values(runtime.headers ?? {}));
    try {
      const url = new URL(runtime.url);
      values.push(decodeURIComponent(url.username), decodeURIComponent(url.password), ...url.searchParams.values());
    } catch {
      // A URL that does not parse never connects: nothing of it is sent anywhere.
    }
  }
  return [...new Set(values.filter((value) => value.length >= SHORTEST_SECRET))].sort((a, b) => b.length - a.length);
}

export class McpConnection {
  private state: McpServerState = 'connecting';
  private client: Client | null = null;
  private transport: Transport | null = null;
  private toolList: McpToolInfo[] = [];
  private lastError: string | null = null;
  private connectedAt: string | null = null;
  private attempts = 0;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** Bumped per attempt: events of an older client (its close, a late tool list) are ignored. */
  private generation = 0;
  private stderrTail = '';
  private refreshing: Promise<void> | null = null;
  /** The connection attempt under way or last made: calls whose session expired wait for the new one. */
  private attempt: Promise<void> = Promise.resolve();
  /** Calls under way per client: a client whose session expired is closed once its last call settled. */
  private readonly calls = new Map<Client, number>();
  private readonly retired = new WeakSet<Client>();
  private refreshAgain = false;
  private readonly secrets: readonly string[];
  /** The stdio transport closed because a message was past max_answer_bytes (the SDK's buffer limit). */
  private overflowed = false;

  constructor(
    readonly runtime: McpServerRuntime,
    private readonly deps: ConnectionDeps,
  ) {
    this.secrets = configuredSecrets(runtime);
  }

  /**
   * A text from the server's side (its stderr, a connection error) without the secrets it was given: a server that
   * complains about its own token (`invalid token <value>`) must not put it in `last_error`, which unauthenticated
   * `GET /health`, `GET /api/mcp` and a failed tool call's message show, nor in the log. The hub passes a failed
   * call's error through it too: an HTTP server's error body (`invalid token <value>`) is in the SDK's message.
   */
  redact(text: string): string {
    let out = text;
    for (const secret of this.secrets) if (out.includes(secret)) out = out.replaceAll(secret, REDACTED);
    return redactSecrets(out);
  }

  /** The most of one answer of this server tollgate reads: its own `max_answer_bytes`, else the config's. */
  maxAnswerBytes(): number {
    return this.runtime.max_answer_bytes ?? this.deps.maxAnswerBytes?.() ?? DEFAULT_MAX_ANSWER_BYTES;
  }

  get name(): string {
    return this.runtime.name;
  }

  /** Starts connecting (in the background: state and health tell how it goes). */
  start(): void {
    void this.reconnect();
  }

  tools(): McpToolInfo[] {
    return this.state === 'ready' ? this.toolList : [];
  }

  /** The stdio server's process id while it runs. */
  pid(): number | null {
    return this.transport instanceof StdioClientTransport ? this.transport.pid : null;
  }

  health(): McpServerHealth {
    return {
      name: this.name,
      type: this.runtime.type,
      state: this.state,
      tools: this.tools().length,
      lastError: this.lastError,
      connectedAt: this.connectedAt,
      attempts: this.attempts,
    };
  }

  /**
   * Calls one of this server's tools by its own name; throws what the SDK throws (timeout, abort, closed). A call an
   * HTTP server refused because it no longer knows the session (404) is made again, once, on a new session.
   */
  async callTool(tool: string, args: Record<string, unknown>, options: { timeoutMs: number; signal?: AbortSignal }, retried = false): Promise<ToolAnswer> {
    const started = performance.now();
    const client = this.client;
    const transport = this.transport;
    if (!client || this.state !== 'ready') throw new Error(`MCP server '${this.name}' is not connected (${this.state}${this.lastError ? `: ${this.lastError}` : ''})`);
    // A signal of the call's own, so the SDK's abort listener goes with the call, not onto the caller's signal.
    const controller = new AbortController();
    const forward = (): void => controller.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', forward, { once: true });
    this.calls.set(client, (this.calls.get(client) ?? 0) + 1);
    // Ends the call's HTTP request when the call fails (timed out, cancelled): after it, nobody reads its answer.
    const request = new AbortController();
    try {
      // An answer past max_answer_bytes fails the call at once (the SDK would wait for one it never parses).
      const fail = (err: Error): void => controller.abort(err);
      const result = await callRequest.run({ signal: request.signal, fail }, () =>
        client.callTool({ name: tool, arguments: args }, CallToolResultSchema, {
          timeout: options.timeoutMs,
          maxTotalTimeout: options.timeoutMs,
          signal: controller.signal,
        }),
      );
      const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
      const structured = isRecord(result.structuredContent) ? result.structuredContent : undefined;
      return { content, ...(structured ? { structuredContent: structured } : {}), isError: result.isError === true };
    } catch (caught) {
      request.abort(caught);
      // An answer past max_answer_bytes: the SDK reports the abort as a timeout, and a stdio server whose answer
      // overflowed its buffer as a closed connection (it closed the server).
      const reason: unknown = controller.signal.reason;
      const overflowed = this.overflowed && caught instanceof McpError && caught.code === ErrorCode.ConnectionClosed;
      const err = reason instanceof McpAnswerTooLarge ? reason : overflowed ? new McpAnswerTooLarge(this.name, this.maxAnswerBytes()) : caught;
      // The server forgot the session (restarted, or it idled out): the MCP spec has the client start a new one, and
      // the call, which the server refused without running it, goes again on it (calls refused at once share it).
      const expired = err instanceof StreamableHTTPError && err.code === 404 && transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined;
      if (expired && !retried && !controller.signal.aborted) {
        if (client === this.client) this.dropped(client, err, true);
        // Waited for within what is left of the call's time (a server that hangs on initialize takes 15 s to fail).
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([this.attempt, new Promise<void>((done) => (timer = setTimeout(done, Math.max(0, options.timeoutMs - (performance.now() - started)))))]);
        clearTimeout(timer);
        const left = options.timeoutMs - (performance.now() - started);
        if (this.state === 'ready' && left > 0 && !options.signal?.aborted) return this.callTool(tool, args, { ...options, timeoutMs: left }, true);
      }
      // An HTTP server a call could not reach (or that lost the session) is reconnected; a stdio server's exit
      // closes the transport by itself.
      const unreachable = err instanceof TypeError || err instanceof StreamableHTTPError;
      if (this.runtime.type === 'http' && unreachable && !controller.signal.aborted && client === this.client) this.dropped(client, err);
      throw err;
    } finally {
      options.signal?.removeEventListener('abort', forward);
      const left = (this.calls.get(client) ?? 1) - 1;
      if (left > 0) this.calls.set(client, left);
      else {
        this.calls.delete(client);
        if (this.retired.has(client)) void client.close().catch(() => undefined);
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.generation++;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.state = 'closed';
    const client = this.client;
    const transport = this.transport;
    this.client = null;
    this.transport = null;
    this.toolList = [];
    // A stateful HTTP server's session is ended (DELETE), as the spec asks of a client done with one: it may hold what
    // the server keeps for it (a browser, a transaction) until it times out. Not waited for long: closing goes on.
    if (transport instanceof StreamableHTTPClientTransport && transport.sessionId !== undefined) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([transport.terminateSession().catch(() => undefined), new Promise<void>((done) => (timer = setTimeout(done, SESSION_END_MS)))]);
      clearTimeout(timer);
    }
    // Clients of expired sessions still waiting for a call's answer go too.
    const retired = [...this.calls.keys()].filter((other) => this.retired.has(other));
    await Promise.all([client, ...retired].map((other) => other?.close().catch(() => undefined)));
  }

  /** The transport of `client` (its answers past the limit end it, see fetchOutbound). */
  private transportFor(client: Client): Transport {
    const runtime = this.runtime;
    if (runtime.type === 'stdio') {
      this.stderrTail = '';
      const transport = new StdioClientTransport({
        command: runtime.command,
        args: runtime.args ?? [],
        // The SDK's small inherited set (PATH, HOME, USER, ...), never the gateway's secrets, then the server's own.
        env: { ...getDefaultEnvironment(), ...runtime.env },
        ...(runtime.cwd ? { cwd: runtime.cwd } : {}),
        stderr: 'pipe',
        // A message past it closes the transport (a line cannot be skipped): the server restarts, the call fails.
        maxBufferSize: this.maxAnswerBytes(),
      });
      transport.stderr?.on('data', (chunk: Buffer) => {
        const text = chunk.toString('utf8');
        this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
        // Redacted only when the line is logged (a chatty server's stderr at the default level costs nothing more).
        if (this.deps.log.level === 'debug' || this.deps.log.level === 'trace') this.deps.log.debug({ server: this.name, stderr: this.redact(text.trimEnd()) }, 'mcp server stderr');
      });
      return transport;
    }
    const headers: Record<string, string> = { ...runtime.headers };
    if (runtime.token) headers.authorization = `Bearer ${runtime.token}`;
    const outbound = this.deps.outbound;
    // undici's fetch over the gateway's dispatcher (read per request: a network change applies to the next one).
    // Its Request and Response are the WHATWG ones the SDK expects; only the type declarations are undici's own.
    // A tools/call request also ends with its call (see callRequest); others (the cancellation notice) do not.
    const fetchOutbound = ((url: string | URL, init?: RequestInit) => {
      const call = callRequest.getStore();
      const ends = call && typeof init?.body === 'string' && init.body.includes(TOOLS_CALL);
      const signal = ends ? (init?.signal ? AbortSignal.any([init.signal, call.signal]) : call.signal) : init?.signal;
      const answer = undiciFetch(url, { ...(init as Parameters<typeof undiciFetch>[1]), ...(signal ? { signal } : {}), dispatcher: outbound.dispatcher });
      // Every answer is read within max_answer_bytes; a tools/call past it fails the call (the connection stays). Any
      // other (the handshake, the tool list, the server's own stream) past it is the server's fault, and nothing
      // would answer what it was for: the connection is dropped and made again after the backoff.
      const exceeded = (err: McpAnswerTooLarge): void => {
        if (ends) call.fail(err);
        else this.dropped(client, err);
      };
      return answer.then((response) => limitAnswer(response as unknown as Response, this.maxAnswerBytes(), this.name, exceeded));
    }) as unknown as FetchLike;
    return new StreamableHTTPClientTransport(new URL(runtime.url), {
      fetch: fetchOutbound,
      requestInit: { headers },
      // The optional server-to-client SSE stream (tools/list_changed) is resumed a few times, then left.
      reconnectionOptions: { initialReconnectionDelay: 1_000, maxReconnectionDelay: 30_000, reconnectionDelayGrowFactor: 2, maxRetries: 5 },
    });
  }

  /** Starts a connection attempt, kept as the one under way. */
  private reconnect(): Promise<void> {
    this.attempt = this.connect();
    return this.attempt;
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const generation = ++this.generation;
    this.attempts++;
    if (this.state !== 'connecting') this.state = 'reconnecting';
    const client = new Client(this.deps.clientInfo, { capabilities: {} });
    const transport = this.transportFor(client);
    this.client = client;
    this.transport = transport;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (generation === this.generation) void this.refreshTools(client, generation);
    });
    client.onclose = () => {
      if (generation === this.generation) this.dropped(client, new Error(this.exitReason('the connection closed')));
    };
    client.onerror = (err) => {
      if (generation !== this.generation) return;
      if (message(err).startsWith('ReadBuffer exceeded maximum size')) this.overflowed = true;
      this.deps.log.debug({ server: this.name, err: this.redact(message(err)) }, 'mcp connection error');
    };
    try {
      await client.connect(transport, { timeout: CONNECT_TIMEOUT_MS });
      const tools = await this.listTools(client);
      if (generation !== this.generation) return;
      this.toolList = tools;
      this.state = 'ready';
      this.overflowed = false;
      this.attempts = 0;
      this.lastError = null;
      this.connectedAt = new Date().toISOString();
      this.deps.log.info({ server: this.name, tools: tools.length }, 'mcp server connected');
    } catch (err) {
      if (generation !== this.generation) return;
      this.dropped(client, new Error(this.exitReason(message(err))));
    }
  }

  /** A stdio server that exited says why on stderr, usually: its last line goes with the reason. */
  private exitReason(reason: string): string {
    const last = this.stderrTail.trim().split('\n').at(-1)?.trim();
    return last ? `${reason} (stderr: ${last.slice(0, 500)})` : reason;
  }

  /**
   * The current client failed or closed: close it (ending a stdio child) and try again after the backoff, or at
   * once (`now`: the server is there and only forgot the session).
   */
  private dropped(client: Client, err: unknown, now = false): void {
    if (this.closed || client !== this.client) return;
    this.generation++;
    this.client = null;
    this.transport = null;
    this.toolList = [];
    this.connectedAt = null;
    this.lastError = this.redact(message(err));
    this.state = 'failed';
    if (now) {
      // Calls still under way on the old session get their own 404 and go again on the new one: it closes after them.
      if (this.calls.has(client)) this.retired.add(client);
      else void client.close().catch(() => undefined);
      this.deps.log.info({ server: this.name, err: this.lastError }, 'mcp session expired; starting a new one');
      void this.reconnect();
      return;
    }
    void client.close().catch(() => undefined);
    const delay = backoffDelay(Math.max(1, this.attempts), this.deps.backoff);
    this.deps.log.warn({ server: this.name, err: this.lastError, retryInMs: delay, attempts: this.attempts }, 'mcp server unavailable; reconnecting');
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.reconnect();
    }, delay);
    this.timer.unref();
  }

  private async listTools(client: Client): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const answer = await client.listTools(cursor ? { cursor } : {}, { timeout: CONNECT_TIMEOUT_MS });
      for (const tool of answer.tools) {
        if (seen.has(tool.name)) continue;
        seen.add(tool.name);
        tools.push({
          server: this.name,
          tool: tool.name,
          name: `${this.name}${MCP_TOOL_SEPARATOR}${tool.name}`,
          description: tool.description ?? tool.title ?? '',
          inputSchema: tool.inputSchema as Record<string, unknown>,
          ...(tool.title !== undefined ? { title: tool.title } : {}),
          ...(isRecord(tool.annotations) ? { annotations: tool.annotations } : {}),
          ...(isRecord(tool.outputSchema) ? { outputSchema: tool.outputSchema } : {}),
        });
      }
      cursor = answer.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  /** Reads the tool list again after `tools/list_changed`; notifications during a refresh cause one more. */
  private async refreshTools(client: Client, generation: number): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = (async () => {
      do {
        this.refreshAgain = false;
        try {
          const tools = await this.listTools(client);
          if (generation === this.generation) {
            this.toolList = tools;
            this.deps.log.info({ server: this.name, tools: tools.length }, 'mcp tool list changed');
          }
        } catch (err) {
          if (generation === this.generation) this.deps.log.warn({ server: this.name, err: this.redact(message(err)) }, 'mcp tool list refresh failed');
        }
      } while (this.refreshAgain && generation === this.generation);
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }
}

/** What an SDK error says about a failed call: it timed out, the connection closed, another MCP error, or none (not an McpError). */
export function mcpErrorKind(err: unknown): 'timeout' | 'closed' | 'other' | null {
  if (!(err instanceof McpError)) return null;
  if (err.code === ErrorCode.RequestTimeout) return 'timeout';
  if (err.code === ErrorCode.ConnectionClosed) return 'closed';
  return 'other';
}
