import type { Database, RootDatabase } from 'lmdb';
import type { EventBus } from '../bus/bus.js';
import type { GatewayEvents, McpToolCall } from '../core/events.js';
import type { Log } from '../log.js';
import { openRecords } from '../store/records.js';

/**
 * One line of the MCP tool-call log: the call as the bus reported it (what the output guardrails did to a direct
 * call's result included), when, and why it failed; never the content.
 */
export interface McpCallRecord extends McpToolCall {
  at: string;
  error: string | null;
}

/** Lines kept (the oldest go first past it). */
const MAX_LINES = 50_000;

/**
 * The MCP tool-call log as a bus subscriber: every `mcp.tool.called` (and the reason of a `mcp.tool.failed`)
 * becomes one line in LMDB, written without being awaited by anyone, read newest first by `GET /api/mcp/calls`.
 */
export class McpCallLog {
  private readonly db: Database<McpCallRecord, [number, number]>;
  private readonly stops: Array<() => void>;
  private readonly writes = new Set<Promise<unknown>>();
  /** Failure reasons by request and tool: `mcp.tool.failed` follows its `mcp.tool.called` in the same turn. */
  private readonly reasons = new Map<string, string>();
  private seq = 0;
  private written = 0;

  constructor(
    root: RootDatabase,
    bus: EventBus,
    private readonly log: Log,
  ) {
    this.db = openRecords<McpCallRecord, [number, number]>(root, { name: 'mcp-calls' });
    this.stops = [
      bus.on('mcp.tool.failed', (event: GatewayEvents['mcp.tool.failed']) => {
        this.reasons.set(`${event.requestId}|${event.server}|${event.tool}`, event.error);
        if (this.reasons.size > 1_000) this.reasons.clear();
      }),
      bus.on('mcp.tool.called', (event: GatewayEvents['mcp.tool.called']) => this.record(event)),
    ];
  }

  /** Newest first; `keyId`, `server` narrow it. */
  list(query: { limit: number; keyId?: string | undefined; server?: string | undefined }): McpCallRecord[] {
    const out: McpCallRecord[] = [];
    for (const { value } of this.db.getRange({ reverse: true })) {
      if (query.keyId && value.keyId !== query.keyId) continue;
      if (query.server && value.server !== query.server) continue;
      // A line written before calls carried `guardrails` reads as one no guardrail acted on.
      out.push(value.guardrails === undefined ? { ...value, guardrails: null } : value);
      if (out.length >= query.limit) break;
    }
    return out;
  }

  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes]);
  }

  stop(): void {
    for (const stop of this.stops) stop();
  }

  private record(event: GatewayEvents['mcp.tool.called']): void {
    // Written a microtask later, once a `mcp.tool.failed` for the same call (emitted just after) has left its reason.
    queueMicrotask(() => this.write(event));
  }

  private write(event: GatewayEvents['mcp.tool.called']): void {
    const id = `${event.requestId}|${event.server}|${event.tool}`;
    const error = this.reasons.get(id) ?? null;
    this.reasons.delete(id);
    const now = Date.now();
    const line: McpCallRecord = { at: new Date(now).toISOString(), ...event, durationMs: Math.round(event.durationMs * 100) / 100, error };
    const write = this.db.put([now, this.seq++], line).catch((err: unknown) => this.log.error({ err }, 'mcp call log: could not write'));
    this.writes.add(write);
    void write.finally(() => this.writes.delete(write));
    if (++this.written % 500 === 0) this.trim();
  }

  private trim(): void {
    const excess = this.db.getCount() - MAX_LINES;
    if (excess <= 0) return;
    for (const key of this.db.getKeys({ limit: excess })) void this.db.remove(key);
  }
}
